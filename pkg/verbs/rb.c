//go:build linux && cgo

#include "rb.h"

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

int rb_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

int rb_alloc(size_t len, void **out)
{
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		page = 4096;
	size_t rounded = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
	void *p = NULL;
	int rc = posix_memalign(&p, (size_t)page, rounded);
	if (rc != 0)
		return rc;
	memset(p, 0, rounded);
	*out = p;
	return 0;
}

void rb_free(void *p) { free(p); }

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif

int rb_alloc_huge(size_t len, size_t page, void **out, size_t *mapped)
{
	if (page == 0 || (page & (page - 1)) != 0)
		return EINVAL;
	size_t rounded = (len + page - 1) / page * page;
	int shift = __builtin_ctzl(page);
	/* Anonymous memory is zeroed; the pages are reserved here (no
	 * MAP_NORESERVE), so a shortage fails now with ENOMEM, not later. */
	void *p = mmap(NULL, rounded, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (shift << MAP_HUGE_SHIFT), -1, 0);
	if (p == MAP_FAILED)
		return errno;
	*out = p;
	*mapped = rounded;
	return 0;
}

void rb_free_huge(void *p, size_t mapped) { munmap(p, mapped); }

struct ibv_mr *rb_reg_mr_addr(struct ibv_pd *pd, uintptr_t addr, size_t len, int access)
{
	struct ibv_mr *mr;
	int tries = 0;
	do {
		mr = ibv_reg_mr(pd, (void *)addr, len, access);
	} while (!mr && errno == EINTR && ++tries < 100);
	return mr;
}

int rb_query_device_ex(struct ibv_context *ctx, struct ibv_device_attr_ex *attr)
{
	memset(attr, 0, sizeof(*attr));
	return ibv_query_device_ex(ctx, NULL, attr);
}

/* Fills the part of wr that names its target: the remote buffer of WRITE,
 * READ and atomics (with the atomic operands), or the address handle of a UD
 * SEND (ah NULL: a connected QP). */
static void set_target(struct ibv_send_wr *wr, int opcode, uint64_t raddr, uint32_t rkey, uint64_t compare,
		       uint64_t swap_add, struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey)
{
	switch (opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.compare_add = opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? compare : swap_add;
		wr->wr.atomic.swap = swap_add;
		break;
	default:
		if (ah) {
			wr->wr.ud.ah = ah;
			wr->wr.ud.remote_qpn = remote_qpn;
			wr->wr.ud.remote_qkey = remote_qkey;
		}
	}
}

int rb_post_send(struct ibv_qp *qp, struct rb_wr_desc *descs, int n, struct ibv_sge *sges,
		 struct ibv_send_wr *wrs, struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey,
		 int *bad_index)
{
	memset(wrs, 0, sizeof(*wrs) * (size_t)n);
	for (int i = 0; i < n; i++) {
		struct rb_wr_desc *d = &descs[i];
		struct ibv_send_wr *wr = &wrs[i];
		wr->wr_id = d->id;
		wr->opcode = d->opcode;
		wr->send_flags = d->flags;
		wr->sg_list = d->nsge ? &sges[d->sge_off] : NULL;
		wr->num_sge = d->nsge;
		wr->next = i + 1 < n ? &wrs[i + 1] : NULL;
		switch (d->opcode) {
		case IBV_WR_RDMA_WRITE_WITH_IMM:
		case IBV_WR_SEND_WITH_IMM:
			wr->imm_data = htobe32(d->imm);
			break;
		}
		set_target(wr, d->opcode, d->raddr, d->rkey, d->compare, d->swap_add, ah, remote_qpn, remote_qkey);
	}
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(qp, wrs, &bad);
	*bad_index = bad ? (int)(bad - wrs) : -1;
	return rc;
}

int rb_post_recv(struct ibv_qp *qp, uint64_t *ids, int *nsges, struct ibv_sge *sges, int n,
		 struct ibv_recv_wr *wrs, int *bad_index)
{
	int off = 0;
	for (int i = 0; i < n; i++) {
		wrs[i].wr_id = ids[i];
		wrs[i].sg_list = nsges[i] ? &sges[off] : NULL;
		wrs[i].num_sge = nsges[i];
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
		off += nsges[i];
	}
	struct ibv_recv_wr *bad = NULL;
	int rc = ibv_post_recv(qp, wrs, &bad);
	*bad_index = bad ? (int)(bad - wrs) : -1;
	return rc;
}

int rb_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *scratch, struct rb_wc *out)
{
	int got = ibv_poll_cq(cq, n, scratch);
	if (got < 0)
		return got == -1 ? -errno : got;
	for (int i = 0; i < got; i++) {
		struct ibv_wc *wc = &scratch[i];
		out[i].id = wc->wr_id;
		out[i].status = wc->status;
		out[i].opcode = wc->opcode;
		out[i].vendor_err = wc->vendor_err;
		out[i].byte_len = wc->byte_len;
		out[i].has_imm = (wc->wc_flags & IBV_WC_WITH_IMM) != 0;
		out[i].imm = out[i].has_imm ? be32toh(wc->imm_data) : 0;
		out[i].qp_num = wc->qp_num;
		out[i].src_qp = wc->src_qp;
	}
	return got;
}

/* ---- clock ------------------------------------------------------------- */

/* The clock of the timed loops reads raw ticks: the TSC where Go found it
 * invariant and the kernel trusts it (rb_clock_use_tsc), read with one
 * instruction as perftest reads cycles, else CLOCK_MONOTONIC in ns. The
 * loops store and compare ticks only; Go scales them to ns after each call,
 * so no floating point runs inside a timed section. */
static int clk_tsc;

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t read_tsc(void) { return __builtin_ia32_rdtsc(); }
int rb_clock_has_tsc(void) { return 1; }
#else
static inline uint64_t read_tsc(void) { return 0; }
int rb_clock_has_tsc(void) { return 0; }
#endif

static inline uint64_t ticks(void) { return clk_tsc ? read_tsc() : mono_ns(); }

uint64_t rb_ticks(void) { return ticks(); }

void rb_clock_use_tsc(int on) { __atomic_store_n(&clk_tsc, on && rb_clock_has_tsc(), __ATOMIC_RELEASE); }

uint64_t rb_mono_ns(void) { return mono_ns(); }
uint64_t rb_read_tsc(void) { return read_tsc(); }

void rb_clock_bracket(uint64_t *m0, uint64_t *t, uint64_t *m1)
{
	*m0 = mono_ns();
	*t = read_tsc();
	*m1 = mono_ns();
}

void rb_clock_measure(double *reported_ns, uint64_t *step_ticks, double *cost_ticks)
{
	struct timespec res;
	clock_getres(CLOCK_MONOTONIC, &res);
	*reported_ns = (double)res.tv_sec * 1e9 + (double)res.tv_nsec;

	/* Smallest non-zero step between consecutive reads. */
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 2000; i++) {
		uint64_t a = ticks(), b;
		do {
			b = ticks();
		} while (b == a);
		if (b > a && b - a < best)
			best = b - a;
	}
	*step_ticks = best;

	/* Mean cost of a read. */
	enum { N = 100000 };
	uint64_t t0 = ticks();
	volatile uint64_t sink = 0;
	for (int i = 0; i < N; i++)
		sink += ticks();
	uint64_t t1 = ticks();
	(void)sink;
	*cost_ticks = (double)(t1 - t0) / N;
}

/* ---- timed loops ------------------------------------------------------- */

/* How often (in spins) a busy loop looks at the clock and the stop flag. */
#define RB_CHECK_EVERY 4096

struct rb_watch {
	uint64_t last_progress;
	unsigned spins;
	int napping; /* the wait passed nap_after_ticks: a check every look */
};

/* Starts a wait. It reads no clock: the first check, RB_CHECK_EVERY spins
 * later, takes the time the idle timeout counts from, so a wait that ends
 * sooner (every sample of a latency run) costs no clock read. */
static inline void watch_reset(struct rb_watch *w)
{
	w->last_progress = 0;
	w->spins = 0;
	w->napping = 0;
}

/* Sleeps nap_ns: the first nap of a thread's wait narrows its timer slack
 * (50 us by default) to 1 us, so a nap lasts about what it asks. */
static void nap(struct rb_loop *l, struct rb_watch *w)
{
	if (!w->napping) {
		w->napping = 1;
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	}
	struct timespec ts = {.tv_sec = 0, .tv_nsec = l->nap_ns};
	nanosleep(&ts, NULL);
}

/* Returns 0 to keep spinning, or RB_ETIMEDOUT / RB_EABORTED. A wait past
 * nap_after_ticks naps between looks (nap_ns > 0 only). */
static inline int watch_check(struct rb_loop *l, struct rb_watch *w)
{
	if (++w->spins < RB_CHECK_EVERY && !w->napping)
		return 0;
	w->spins = 0;
	if (__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
		return RB_EABORTED;
	uint64_t now = ticks();
	if (w->last_progress == 0)
		w->last_progress = now;
	else if (l->idle_timeout_ticks && now - w->last_progress > l->idle_timeout_ticks)
		return RB_ETIMEDOUT;
	else if (l->nap_ns > 0 && now - w->last_progress > l->nap_after_ticks)
		nap(l, w);
	return 0;
}

void rb_loop_stop(struct rb_loop *l) { __atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE); }

static int wc_fail(struct rb_loop *l, struct ibv_wc *wc)
{
	l->wc_status = wc->status;
	l->wc_opcode = wc->opcode;
	l->wc_vendor = wc->vendor_err;
	l->wc_qpn = wc->qp_num;
	return RB_EWC;
}

/* While waiting for the peer, looks at the send CQ: a send that failed
 * (the peer is gone: IBV_WC_RETRY_EXC_ERR) completes in error even when
 * unsignalled, and ends the wait at once instead of at the idle timeout. A
 * successful signalled completion found here is accounted for. */
static int check_sends(struct rb_loop *l)
{
	if (l->pending_sig == 0 && l->kind != RB_LAT_WRITE && l->kind != RB_LAT_SEND)
		return 0;
	struct ibv_wc wc;
	int n = ibv_poll_cq(l->scq, 1, &wc);
	if (n < 0) {
		l->err = n == -1 ? errno : -n;
		return RB_EPOLL;
	}
	if (n == 1) {
		if (wc.status != IBV_WC_SUCCESS)
			return wc_fail(l, &wc);
		if (l->pending_sig > 0)
			l->pending_sig--;
	}
	return 0;
}

/* Polls cq for up to max completions into l->wcs. In event mode, an empty
 * CQ is armed and the channel waited on (100 ms at a time, so stop and the
 * idle timeout still apply). Returns the count, 0 when nothing arrived in
 * this wait, or an RB_E* code. */
static int rb_poll(struct rb_loop *l, struct ibv_cq *cq, struct ibv_comp_channel *ch, int max)
{
	int n = ibv_poll_cq(cq, max, l->wcs);
	if (n != 0 || ch == NULL) {
		if (n < 0) {
			l->err = n == -1 ? errno : -n;
			return RB_EPOLL;
		}
		return n;
	}
	if (ibv_req_notify_cq(cq, 0)) {
		l->err = errno;
		return RB_EPOLL;
	}
	n = ibv_poll_cq(cq, max, l->wcs); /* anything that raced with arming */
	if (n < 0) {
		l->err = n == -1 ? errno : -n;
		return RB_EPOLL;
	}
	if (n != 0)
		return n;
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	int pr = poll(&pfd, 1, 100);
	if (pr < 0 && errno != EINTR) {
		l->err = errno;
		return RB_EPOLL;
	}
	if (pr > 0) {
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx)) {
			l->err = errno;
			return RB_EPOLL;
		}
		ibv_ack_cq_events(ev_cq, 1);
	}
	return 0;
}

/* Waits for exactly one completion on cq (latency paths). */
static int rb_wait_one(struct rb_loop *l, struct ibv_cq *cq, struct ibv_comp_channel *ch)
{
	struct rb_watch w;
	watch_reset(&w);
	for (;;) {
		int n = rb_poll(l, cq, ch, 1);
		if (n < 0)
			return n;
		if (n == 1) {
			if (l->wcs[0].status != IBV_WC_SUCCESS)
				return wc_fail(l, &l->wcs[0]);
			return 0;
		}
		if (ch != NULL)
			w.spins = RB_CHECK_EVERY - 1; /* a channel wait is long: check every time */
		int rc = watch_check(l, &w);
		if (rc)
			return rc;
		if (w.spins == 0 && cq != l->scq && (rc = check_sends(l)))
			return rc;
	}
}

/* Polls the send CQ until every signalled send has completed. */
static int drain_sends(struct rb_loop *l)
{
	while (l->pending_sig > 0) {
		int rc = rb_wait_one(l, l->scq, l->sch);
		if (rc)
			return rc;
		l->pending_sig--;
	}
	return 0;
}

static void fill_remote(struct rb_loop *l, struct rb_qp *q, struct ibv_send_wr *wr)
{
	set_target(wr, l->opcode, q->raddr, q->rkey, l->cmp, l->swap_add, l->is_ud ? q->ah : NULL, q->remote_qpn,
		   q->remote_qkey);
}

int rb_loop_init(struct rb_loop *l)
{
	int pl = l->post_list > 0 ? l->post_list : 1;
	l->post_list = pl;
	if (l->cq_mod <= 0)
		l->cq_mod = 1;
	l->wrs = calloc((size_t)l->nqp * pl, sizeof(*l->wrs));
	l->sges = calloc((size_t)l->nqp * pl, sizeof(*l->sges));
	l->rwrs = calloc((size_t)l->nqp, sizeof(*l->rwrs));
	l->rsges = calloc((size_t)l->nqp, sizeof(*l->rsges));
	if (l->kind == RB_BW_SEND)
		l->cps = calloc(RB_CP_MAX, sizeof(*l->cps));
	if (!l->wrs || !l->sges || !l->rwrs || !l->rsges || (l->kind == RB_BW_SEND && !l->cps)) {
		rb_loop_destroy(l);
		return ENOMEM;
	}
	/* READ and atomics write into the local buffer; others read from it. */
	char *local = l->tx;
	uint32_t lkey = l->tx_lkey;
	for (int q = 0; q < l->nqp; q++) {
		for (int j = 0; j < pl; j++) {
			struct ibv_send_wr *wr = &l->wrs[q * pl + j];
			struct ibv_sge *sge = &l->sges[q * pl + j];
			sge->addr = (uintptr_t)local;
			sge->length = l->size;
			sge->lkey = lkey;
			wr->sg_list = sge;
			wr->num_sge = 1;
			wr->opcode = l->opcode;
			wr->send_flags = l->use_inline ? IBV_SEND_INLINE : 0;
			wr->next = j + 1 < pl ? &l->wrs[q * pl + j + 1] : NULL;
			fill_remote(l, &l->qps[q], wr);
		}
		l->rsges[q].addr = (uintptr_t)l->rx;
		l->rsges[q].length = l->rx_size;
		l->rsges[q].lkey = l->rx_lkey;
		l->rwrs[q].sg_list = &l->rsges[q];
		l->rwrs[q].num_sge = 1;
		l->rwrs[q].wr_id = (uint64_t)q;
	}
	return 0;
}

void rb_loop_destroy(struct rb_loop *l)
{
	free(l->wrs);
	free(l->sges);
	free(l->rwrs);
	free(l->rsges);
	free(l->cps);
	l->wrs = NULL;
	l->sges = NULL;
	l->rwrs = NULL;
	l->rsges = NULL;
	l->cps = NULL;
}

/* A receive's wr_id names its QP (low 32 bits) and the slot of the receive
 * buffer it points at (high 32 bits), so that a completion tells where its
 * data landed (rb_repost_recv, the data check after a measured loop). */
static inline uint64_t recv_id(int q, uint32_t slot) { return (uint64_t)(uint32_t)q | (uint64_t)slot << 32; }

static inline int post_recv(struct rb_loop *l, int q)
{
	uint32_t slot = 0;
	if (l->rx_cycle_slots) {
		struct rb_qp *p = &l->qps[q];
		slot = p->rslot;
		l->rsges[q].addr = (uintptr_t)(l->rx + (uint64_t)slot * l->rx_cycle_stride);
		if (++p->rslot == l->rx_cycle_slots)
			p->rslot = 0;
	}
	l->rwrs[q].wr_id = recv_id(q, slot);
	struct ibv_recv_wr *bad;
	int rc = ibv_post_recv(l->qps[q].qp, &l->rwrs[q], &bad);
	if (rc) {
		l->err = rc;
		return RB_EPOST;
	}
	return 0;
}

int rb_repost_recv(struct rb_loop *l, uint64_t wr_id)
{
	int q = (int)(uint32_t)wr_id;
	uint32_t slot = (uint32_t)(wr_id >> 32);
	if (q < 0 || q >= l->nqp || (slot != 0 && slot >= l->rx_cycle_slots)) {
		l->err = EINVAL;
		return RB_EPOST;
	}
	l->rsges[q].addr = (uintptr_t)(l->rx + (uint64_t)slot * l->rx_cycle_stride);
	l->rwrs[q].wr_id = wr_id;
	struct ibv_recv_wr *bad;
	int rc = ibv_post_recv(l->qps[q].qp, &l->rwrs[q], &bad);
	if (rc) {
		l->err = rc;
		return RB_EPOST;
	}
	return 0;
}

int rb_post_recvs(struct rb_loop *l, int n)
{
	for (int q = 0; q < l->nqp; q++)
		for (int i = 0; i < n; i++) {
			int rc = post_recv(l, q);
			if (rc)
				return rc;
		}
	return 0;
}

/* Posts the single latency WR of QP 0, signalled every cq_mod iterations
 * and on the last one. Before a signalled post, the previous signalled one is
 * reaped (it completed long ago), so the send queue never overflows. */
static inline int post_lat(struct rb_loop *l, int signaled)
{
	struct ibv_send_wr *wr = &l->wrs[0], *bad;
	wr->send_flags = (l->use_inline ? IBV_SEND_INLINE : 0) | (signaled ? IBV_SEND_SIGNALED : 0);
	int rc = ibv_post_send(l->qps[0].qp, wr, &bad);
	if (rc) {
		l->err = rc;
		return RB_EPOST;
	}
	if (signaled)
		l->pending_sig++;
	return 0;
}

static inline int lat_signaled(struct rb_loop *l)
{
	return (l->iter + 1) % (uint64_t)l->cq_mod == 0 || l->iter + 1 == l->total;
}

/* Spins until the last byte of rx equals want. */
static inline int spin_byte(struct rb_loop *l, uint8_t want)
{
	volatile uint8_t *p = (volatile uint8_t *)(l->rx + l->size - 1);
	struct rb_watch w;
	watch_reset(&w);
	while (*p != want) {
		int rc = watch_check(l, &w);
		if (rc)
			return rc;
		if (w.spins == 0 && (rc = check_sends(l)))
			return rc;
	}
	return 0;
}

static int64_t lat_write(struct rb_loop *l, uint64_t n, uint64_t *samples, uint64_t until)
{
	volatile uint8_t *post = (volatile uint8_t *)(l->tx + l->size - 1);
	uint64_t i;
	for (i = 0; i < n && l->iter < l->total; i++) {
		uint8_t seq = (uint8_t)(l->iter + 1);
		int sig = lat_signaled(l);
		int rc;
		if (sig && (rc = drain_sends(l)))
			return rc;
		if (l->role == RB_INITIATOR) {
			*post = seq;
			uint64_t t0 = ticks();
			if ((rc = post_lat(l, sig)))
				return rc;
			if ((rc = spin_byte(l, seq)))
				return rc;
			uint64_t t1 = ticks();
			if (samples)
				samples[i] = t1 - t0;
			if (until && t1 >= until) {
				l->iter++;
				return (int64_t)i + 1;
			}
		} else {
			if ((rc = spin_byte(l, seq)))
				return rc;
			*post = seq;
			if ((rc = post_lat(l, sig)))
				return rc;
		}
		l->iter++;
	}
	return (int64_t)i;
}

static int64_t lat_send(struct rb_loop *l, uint64_t n, uint64_t *samples, uint64_t until)
{
	uint64_t i;
	for (i = 0; i < n && l->iter < l->total; i++) {
		int sig = lat_signaled(l);
		int rc;
		if (sig && (rc = drain_sends(l)))
			return rc;
		if (l->role == RB_INITIATOR) {
			uint64_t t0 = ticks();
			if ((rc = post_lat(l, sig)))
				return rc;
			if ((rc = rb_wait_one(l, l->rcq, l->rch)))
				return rc;
			uint64_t t1 = ticks();
			if (samples)
				samples[i] = t1 - t0;
			if ((rc = post_recv(l, 0)))
				return rc;
			if (until && t1 >= until) {
				l->iter++;
				return (int64_t)i + 1;
			}
		} else {
			if ((rc = rb_wait_one(l, l->rcq, l->rch)))
				return rc;
			if ((rc = post_lat(l, sig)))
				return rc;
			if ((rc = post_recv(l, 0)))
				return rc;
		}
		l->iter++;
	}
	return (int64_t)i;
}

static int64_t lat_post(struct rb_loop *l, uint64_t n, uint64_t *samples, uint64_t until)
{
	uint64_t i;
	for (i = 0; i < n && l->iter < l->total; i++) {
		int rc;
		uint64_t t0 = ticks();
		if ((rc = post_lat(l, 1)))
			return rc;
		if ((rc = rb_wait_one(l, l->scq, l->sch)))
			return rc;
		uint64_t t1 = ticks();
		l->pending_sig--;
		if (samples)
			samples[i] = t1 - t0;
		l->iter++;
		if (until && t1 >= until)
			return (int64_t)i + 1;
	}
	return (int64_t)i;
}

int64_t rb_lat_run(struct rb_loop *l, uint64_t n, uint64_t *samples, uint64_t until)
{
	int64_t r;
	switch (l->kind) {
	case RB_LAT_WRITE:
		r = lat_write(l, n, samples, until);
		break;
	case RB_LAT_SEND:
		r = lat_send(l, n, samples, until);
		break;
	case RB_LAT_POST:
		r = lat_post(l, n, samples, until);
		break;
	default:
		l->err = EINVAL;
		return RB_EPOST;
	}
	if (r >= 0 && l->iter == l->total) {
		int rc = drain_sends(l);
		if (rc)
			return rc;
	}
	return r;
}

/* ---- bandwidth --------------------------------------------------------- */

#define QP_SHIFT 48
#define IDX_MASK ((1ull << QP_SHIFT) - 1)

/* The software rate limiter: how many of k messages QP p may post now (0:
 * none yet). A QP's schedule starts at its first post (and again after
 * rb_loop's pacing is reset): message m is due m pace_gaps after it, and
 * none goes before its time. A QP that fell behind (a stall, a full window)
 * posts what is due at once, but forgives lateness beyond pace_burst
 * messages: its schedule moves on instead. So the rate from a QP's first
 * message never exceeds the limit, and over a shorter span exceeds it by
 * at most pace_burst messages. Posting counts as progress for the idle
 * timeout: a slow rate is not a silent peer. */
static inline uint64_t pace(struct rb_loop *l, struct rb_qp *p, uint64_t k)
{
	uint64_t now = ticks();
	if (l->pace_base == 0)
		l->pace_base = now;
	uint64_t t = (now - l->pace_base) << RB_PACE_SHIFT;
	uint64_t slack = l->pace_burst * l->pace_gap;
	if (t > slack && p->pace_next < t - slack)
		p->pace_next = t - slack;
	if (p->pace_next > t)
		return 0;
	uint64_t due = (t - p->pace_next) / l->pace_gap + 1;
	l->progress_tick = now;
	return k < due ? k : due;
}

/* Posts as many WRs on QP q as its window allows; returns the number posted
 * or an RB_E* code. Every cq_mod-th WR, and the last of the target, is
 * signalled; its wr_id carries the QP and the count posted through it, so
 * one completion accounts for all the unsignalled WRs before it. */
static inline int bw_post(struct rb_loop *l, int q)
{
	struct rb_qp *p = &l->qps[q];
	int pl = l->post_list;
	int total = 0;
	for (;;) {
		uint64_t room = (uint64_t)l->tx_depth - (p->posted - p->completed);
		uint64_t left = p->target - p->posted;
		uint64_t k = left < (uint64_t)pl ? left : (uint64_t)pl;
		if (k == 0 || room < k)
			return total;
		if (l->pace_gap && (k = pace(l, p, k)) == 0)
			return total;
		struct ibv_send_wr *first = &l->wrs[q * pl];
		unsigned base = l->use_inline ? IBV_SEND_INLINE : 0;
		for (uint64_t j = 0; j < k; j++) {
			struct ibv_send_wr *wr = &first[j];
			uint64_t idx = p->posted + j + 1;
			wr->wr_id = ((uint64_t)q << QP_SHIFT) | idx;
			wr->send_flags = base | ((idx % (uint64_t)l->cq_mod == 0 || idx == p->target) ? IBV_SEND_SIGNALED : 0);
			wr->next = j + 1 < k ? &first[j + 1] : NULL;
			if (l->cycle_slots) {
				uint64_t off = (uint64_t)p->slot * l->cycle_stride;
				wr->sg_list->addr = (uintptr_t)(l->tx + off);
				if (l->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || l->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
					wr->wr.atomic.remote_addr = p->raddr + off;
				else if (l->opcode != IBV_WR_SEND)
					wr->wr.rdma.remote_addr = p->raddr + off;
				if (++p->slot == l->cycle_slots)
					p->slot = 0;
			}
		}
		if (l->first_tick == 0)
			l->first_tick = ticks();
		struct ibv_send_wr *bad;
		int rc = ibv_post_send(p->qp, first, &bad);
		if (rc) {
			l->err = rc;
			return RB_EPOST;
		}
		p->posted += k;
		l->posted_total += k;
		if (l->pace_gap)
			p->pace_next += k * l->pace_gap;
		total += (int)k;
	}
}

/* Takes a checkpoint at now; when they are full, keeps every other one
 * (the first among them) and doubles the gap. */
static void cp_take(struct rb_loop *l, uint64_t now)
{
	if (l->cp_n == RB_CP_MAX) {
		for (int i = 1; i < RB_CP_MAX / 2; i++)
			l->cps[i] = l->cps[2 * i];
		l->cp_n = RB_CP_MAX / 2;
		l->cp_gap *= 2;
	}
	struct rb_cp *c = &l->cps[l->cp_n++];
	c->tick = now;
	c->posted = l->posted_total;
	c->completed = l->total_completed;
	l->cp_last = now;
}

int rb_bw_run(struct rb_loop *l, uint64_t until)
{
	struct rb_watch w;
	watch_reset(&w);
	for (;;) {
		int done = 1;
		for (int q = 0; q < l->nqp; q++) {
			int rc = bw_post(l, q);
			if (rc < 0)
				return rc;
			if (l->qps[q].completed < l->qps[q].target)
				done = 0;
		}
		if (done)
			return 1;
		int n = rb_poll(l, l->scq, l->sch, 16);
		if (n < 0)
			return n;
		if (n > 0) {
			uint64_t now = ticks();
			for (int i = 0; i < n; i++) {
				struct ibv_wc *wc = &l->wcs[i];
				if (wc->status != IBV_WC_SUCCESS)
					return wc_fail(l, wc);
				struct rb_qp *p = &l->qps[wc->wr_id >> QP_SHIFT];
				uint64_t idx = wc->wr_id & IDX_MASK;
				__atomic_store_n(&l->total_completed, l->total_completed + (idx - p->completed), __ATOMIC_RELAXED);
				p->completed = idx;
			}
			__atomic_store_n(&l->last_tick, now, __ATOMIC_RELAXED);
			l->progress_tick = now;
			if (l->cps && now - l->cp_last >= l->cp_gap)
				cp_take(l, now);
			if ((until && now >= until) || (l->stop_completed && l->total_completed >= l->stop_completed))
				return 0;
			continue;
		}
		if (l->sch)
			w.spins = RB_CHECK_EVERY - 1;
		if (++w.spins >= RB_CHECK_EVERY) {
			w.spins = 0;
			uint64_t now = ticks();
			if (until && now >= until)
				return 0;
			if (__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
				return RB_EABORTED;
			/* Progress is kept across calls: Go calls once a second. */
			if (l->progress_tick == 0)
				l->progress_tick = now;
			else if (l->idle_timeout_ticks && now - l->progress_tick > l->idle_timeout_ticks)
				return RB_ETIMEDOUT;
		}
	}
}

void rb_bw_finish(struct rb_loop *l)
{
	for (int q = 0; q < l->nqp; q++) {
		struct rb_qp *p = &l->qps[q];
		uint64_t m = (uint64_t)l->cq_mod;
		uint64_t t = (p->posted + m - 1) / m * m;
		p->target = t;
	}
}

void rb_loop_snapshot(struct rb_loop *l, uint64_t *completed, uint64_t *last_tick)
{
	*completed = __atomic_load_n(&l->total_completed, __ATOMIC_RELAXED);
	*last_tick = __atomic_load_n(&l->last_tick, __ATOMIC_RELAXED);
}

void rb_loop_expect(struct rb_loop *l, uint64_t total) { __atomic_store_n(&l->total, total, __ATOMIC_RELEASE); }

int rb_bw_recv_run(struct rb_loop *l, uint64_t until)
{
	struct rb_watch w;
	watch_reset(&w);
	for (;;) {
		uint64_t total = __atomic_load_n(&l->total, __ATOMIC_RELAXED);
		if (total && l->total_completed >= total)
			return 1;
		int n = rb_poll(l, l->rcq, l->rch, 16);
		if (n < 0)
			return n;
		if (n > 0) {
			uint64_t now = ticks();
			if (l->first_tick == 0)
				l->first_tick = now;
			for (int i = 0; i < n; i++) {
				struct ibv_wc *wc = &l->wcs[i];
				if (wc->status != IBV_WC_SUCCESS)
					return wc_fail(l, wc);
				l->total_recv_bytes += wc->byte_len;
				int rc = post_recv(l, (int)(uint32_t)wc->wr_id);
				if (rc)
					return rc;
			}
			l->total_completed += (uint64_t)n;
			l->last_tick = now;
			l->progress_tick = now;
			continue;
		}
		if (l->rch)
			w.spins = RB_CHECK_EVERY - 1;
		if (++w.spins >= RB_CHECK_EVERY) {
			w.spins = 0;
			uint64_t now = ticks();
			if (__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
				return 1;
			if (until && now >= until)
				return 0;
			if (l->progress_tick == 0)
				l->progress_tick = now;
			else if (l->idle_timeout_ticks && now - l->progress_tick > l->idle_timeout_ticks)
				return RB_ETIMEDOUT;
		}
	}
}
