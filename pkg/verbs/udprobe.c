//go:build linux && cgo

#include "udprobe.h"
#include "rb.h"

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define RB_UDP_MAGIC 0x72627564u /* "rbud" */
#define RB_UDP_REQ 1u
#define RB_UDP_RESP 2u
#define RB_UDP_DELAY 3u /* a responder's delay, after a stamped answer */

/* A probe's flag: its prober stamps, and asks for the responder's delay.
 * An answer's: the delay follows. (A responder older than the flags
 * echoes a probe's flags unchanged: no delay follows.) */
#define RB_UDP_F_STAMPS 1u
#define RB_UDP_F_DELAY 2u

/* A delay message's work request: no answer's stamp to take at its
 * completion. */
#define RB_UDP_WR_DELAY (1ull << 32)

/* How long a stamped QP waits for a send's completion (its stamp) once
 * it is due, and a prober for a responder's delay once the answer came:
 * microseconds on a NIC, bounds for emulation and faults. */
#define RB_UDP_STAMP_WAIT_NS 10000000ull
#define RB_UDP_DELAY_WAIT_NS 50000000ull

/* A probe message's header, in the sender's byte order (both ends are the
 * same program; a foreign message fails the magic and is counted bad). */
struct rb_udp_msg {
	uint32_t magic;
	uint16_t kind;
	uint16_t flags;  /* RB_UDP_F_*: 0 from a prober older than them */
	uint32_t qkey;   /* the sender's Q_Key: the answer's */
	uint32_t delay;  /* RB_UDP_DELAY's: the responder's delay in ns */
	uint64_t seq;
	/* cookie: the prober's, so that an answer meant for another QP that
	 * reused this QPN is not taken */
};

struct rb_udp_ah {
	uint8_t key[17]; /* source GID, traffic class */
	uint8_t used;
	struct ibv_ah *ah;
};

/* A stamped answer in a send slot: its probe's receive stamp and where
 * the delay goes once the answer's send completes. */
struct rb_udp_pend {
	uint64_t rx_ts, seq, cookie;
	struct ibv_ah *ah;
	uint32_t qpn, qkey;
	int live;
};

/* A work completion, from either kind of CQ. */
struct rb_udp_wc {
	uint64_t wr_id, ts; /* ts: its stamp, 0 without */
	int status;
	uint32_t byte_len, src_qp; /* a receive's */
	unsigned int wc_flags;
};

static uint32_t slot_len(const struct rb_udp *u) { return RB_UDP_GRH + u->size; }
static char *rx_slot(const struct rb_udp *u, uint32_t i) { return u->buf + (size_t)i * slot_len(u); }
static char *tx_slot(const struct rb_udp *u, uint32_t i)
{
	return u->buf + (size_t)u->nrecv * slot_len(u) + (size_t)i * u->size;
}

static int post_recv(struct rb_udp *u, uint32_t i)
{
	struct ibv_sge sge = {.addr = (uintptr_t)rx_slot(u, i), .length = slot_len(u), .lkey = u->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
	return ibv_post_recv(u->qp, &wr, &bad);
}

/* Makes the CQs extended (ibv_create_cq_ex), stamping as stamps says
 * (RB_UDP_TS_NONE: no stamps). 0 or an errno. */
static int make_cqs_ex(struct rb_udp *u, int stamps)
{
	uint64_t ts = stamps == RB_UDP_TS_WALLCLOCK ? IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK
		      : stamps == RB_UDP_TS_CYCLES  ? IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
						     : 0;
	struct ibv_cq_init_attr_ex ra = {.cqe = u->nrecv, .channel = u->ch,
					 .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_SRC_QP | ts};
	struct ibv_cq_init_attr_ex sa = {.cqe = u->nsend, .wc_flags = ts};
	errno = 0;
	u->rcqx = ibv_create_cq_ex(u->pd->context, &ra);
	if (!u->rcqx)
		return errno ? errno : EOPNOTSUPP;
	u->scqx = ibv_create_cq_ex(u->pd->context, &sa);
	if (!u->scqx) {
		int e = errno ? errno : EOPNOTSUPP;
		ibv_destroy_cq(ibv_cq_ex_to_cq(u->rcqx));
		u->rcqx = NULL;
		return e;
	}
	u->rcq = ibv_cq_ex_to_cq(u->rcqx);
	u->scq = ibv_cq_ex_to_cq(u->scqx);
	u->stamps = stamps;
	return 0;
}

/* Makes the CQs: stamping in ns where the device converts its stamps,
 * else in its cycles, when it stamps (ts_mask); else extended without
 * stamps, so that every device polls the same way; else classic. */
static int make_cqs(struct rb_udp *u, uint64_t ts_mask, int host_stamps)
{
	if (ts_mask && !host_stamps) {
		if (make_cqs_ex(u, RB_UDP_TS_WALLCLOCK) == 0 || make_cqs_ex(u, RB_UDP_TS_CYCLES) == 0)
			return 0;
	}
	if (make_cqs_ex(u, RB_UDP_TS_NONE) != 0) {
		u->rcq = ibv_create_cq(u->pd->context, (int)u->nrecv, NULL, u->ch, 0);
		if (!u->rcq)
			return errno ? errno : EIO;
		u->scq = ibv_create_cq(u->pd->context, (int)u->nsend, NULL, NULL, 0);
		if (!u->scq)
			return errno ? errno : EIO;
	}
	if (host_stamps)
		u->stamps = RB_UDP_TS_HOST;
	return 0;
}

int rb_udp_open(struct ibv_pd *pd, uint8_t port, uint8_t gid_index, uint32_t size, uint32_t nrecv,
		uint32_t nsend, uint32_t qkey, uint64_t ts_mask, uint64_t ts_khz, int host_stamps,
		struct rb_udp **out, const char **where)
{
	struct rb_udp *u = calloc(1, sizeof(*u));
	if (!u) {
		*where = "alloc";
		return ENOMEM;
	}
	u->pd = pd;
	u->port = port;
	u->gid_index = gid_index;
	u->size = size < RB_UDP_HDR + 8 ? RB_UDP_HDR + 8 : size;
	u->nrecv = nrecv;
	u->nsend = nsend;
	u->qkey = qkey;
	u->ts_mask = ts_mask;
	u->ts_khz = ts_khz;
	u->stopfd = -1;
	int rc = 0;
#define FAIL(w, e)            \
	do {                  \
		*where = (w); \
		rc = (e);     \
		goto fail;    \
	} while (0)
	u->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->stopfd < 0)
		FAIL("eventfd", errno);
	u->ch = ibv_create_comp_channel(pd->context);
	if (!u->ch)
		FAIL("create completion channel", errno);
	if ((rc = make_cqs(u, ts_mask, host_stamps)) != 0)
		FAIL("create cq", rc);
	if (u->stamps != RB_UDP_TS_NONE) {
		u->tx_ts = calloc(nsend, sizeof(*u->tx_ts));
		u->pend = calloc(nsend, sizeof(*u->pend));
		if (!u->tx_ts || !u->pend)
			FAIL("alloc", ENOMEM);
	}
	size_t len = (size_t)nrecv * slot_len(u) + (size_t)nsend * u->size;
	void *buf = NULL;
	if ((rc = rb_alloc(len, &buf)) != 0)
		FAIL("alloc buffer", rc);
	u->buf = buf;
	u->mr = ibv_reg_mr(pd, u->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!u->mr)
		FAIL("reg mr", errno);
	struct ibv_qp_init_attr ia = {
		.send_cq = u->scq,
		.recv_cq = u->rcq,
		.cap = {.max_send_wr = nsend, .max_recv_wr = nrecv, .max_send_sge = 1, .max_recv_sge = 1,
			.max_inline_data = u->size},
		.qp_type = IBV_QPT_UD,
	};
	u->qp = ibv_create_qp(pd, &ia);
	if (!u->qp) {
		/* a device with less inline: send from the registered buffer */
		ia.cap.max_inline_data = 0;
		u->qp = ibv_create_qp(pd, &ia);
	}
	if (!u->qp)
		FAIL("create qp", errno);
	u->max_inline = ia.cap.max_inline_data;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = port, .qkey = qkey};
	if ((rc = ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) != 0)
		FAIL("modify qp to INIT", rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if ((rc = ibv_modify_qp(u->qp, &a, IBV_QP_STATE)) != 0)
		FAIL("modify qp to RTR", rc);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if ((rc = ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) != 0)
		FAIL("modify qp to RTS", rc);
	for (uint32_t i = 0; i < nrecv; i++)
		if ((rc = post_recv(u, i)) != 0)
			FAIL("post recv", rc);
	if ((rc = ibv_req_notify_cq(u->rcq, 0)) != 0)
		FAIL("arm cq", rc);
	*out = u;
	return 0;
#undef FAIL
fail:
	rb_udp_close(u);
	return rc ? rc : EIO;
}

static void drop_ahs(struct rb_udp *u)
{
	for (uint32_t i = 0; i < u->cap_ah; i++)
		if (u->ahs[i].used)
			ibv_destroy_ah(u->ahs[i].ah);
	free(u->ahs);
	u->ahs = NULL;
	u->nah = u->cap_ah = 0;
}

/* Drops the delays still to send (of answers whose sends did not
 * complete in time, or whose address handles go). */
static void drop_delays(struct rb_udp *u)
{
	for (uint32_t i = 0; u->pend && i < u->nsend; i++)
		u->pend[i].live = 0;
	u->npend = 0;
}

void rb_udp_close(struct rb_udp *u)
{
	if (!u)
		return;
	if (u->qp)
		ibv_destroy_qp(u->qp);
	drop_ahs(u);
	if (u->mr)
		ibv_dereg_mr(u->mr);
	if (u->rcq) {
		/* unacknowledged events would make ibv_destroy_cq wait */
		ibv_destroy_cq(u->rcq);
	}
	if (u->scq)
		ibv_destroy_cq(u->scq);
	if (u->ch)
		ibv_destroy_comp_channel(u->ch);
	free(u->buf);
	free(u->tx_ts);
	free(u->pend);
	if (u->stopfd >= 0)
		close(u->stopfd);
	free(u);
}

uint32_t rb_udp_qpn(struct rb_udp *u) { return u->qp->qp_num; }

void rb_udp_stop(struct rb_udp *u)
{
	uint64_t one = 1;
	ssize_t w = write(u->stopfd, &one, sizeof(one));
	(void)w;
}

static int make_ah(struct rb_udp *u, const uint8_t *dgid, uint8_t tclass, uint8_t hop_limit, uint8_t sl,
		   struct ibv_ah **out)
{
	struct ibv_ah_attr ah = {.is_global = 1, .sl = sl, .port_num = u->port};
	memcpy(ah.grh.dgid.raw, dgid, 16);
	ah.grh.sgid_index = u->gid_index;
	ah.grh.hop_limit = hop_limit ? hop_limit : 64;
	ah.grh.traffic_class = tclass;
	struct ibv_ah *h = ibv_create_ah(u->pd, &ah);
	if (!h)
		return errno ? errno : EIO;
	*out = h;
	return 0;
}

int rb_udp_ah(struct rb_udp *u, const uint8_t *dgid, uint8_t tclass, uint8_t hop_limit, uint8_t sl,
	      struct ibv_ah **out)
{
	return make_ah(u, dgid, tclass, hop_limit, sl, out);
}

/* The sender's GID and traffic class from what a UD receive holds before
 * the message: a GRH, or on RoCE v2 over IPv4 20 bytes of zeros and the
 * IPv4 header (its source address as an IPv4-mapped GID). */
static void source_of(const uint8_t *grh, uint8_t key[17])
{
	static const uint8_t zero[20];
	if (memcmp(grh, zero, 20) == 0 && (grh[20] >> 4) == 4) {
		memset(key, 0, 10);
		key[10] = key[11] = 0xff;
		memcpy(key + 12, grh + 20 + 12, 4);
		key[16] = grh[20 + 1] & 0xfc; /* the TOS less ECN */
		return;
	}
	uint32_t vtf;
	memcpy(&vtf, grh, 4);
	vtf = be32toh(vtf);
	memcpy(key, grh + 8, 16);
	key[16] = (uint8_t)((vtf >> 20) & 0xfc);
}

/* The address handle answering the sender of a receive: made once per
 * source GID and traffic class, and kept. */
static struct ibv_ah *answer_ah(struct rb_udp *u, const uint8_t *grh)
{
	uint8_t key[17];
	source_of(grh, key);
	if (u->nah + 1 > u->cap_ah / 4 * 3) {
		/* full, or none yet: start again (peers come and go); the
		 * delays still to send go with the handles they name */
		drop_delays(u);
		drop_ahs(u);
		u->cap_ah = 4096;
		u->ahs = calloc(u->cap_ah, sizeof(*u->ahs));
		if (!u->ahs) {
			u->cap_ah = 0;
			return NULL;
		}
	}
	uint32_t h = 2166136261u;
	for (int i = 0; i < 17; i++)
		h = (h ^ key[i]) * 16777619u;
	for (uint32_t i = h & (u->cap_ah - 1);; i = (i + 1) & (u->cap_ah - 1)) {
		struct rb_udp_ah *e = &u->ahs[i];
		if (e->used && memcmp(e->key, key, 17) == 0)
			return e->ah;
		if (!e->used) {
			/* the answer leaves with the probe's traffic class, toward
			 * its source */
			if (make_ah(u, key, key[16], 64, 0, &e->ah) != 0)
				return NULL;
			memcpy(e->key, key, 17);
			e->used = 1;
			u->nah++;
			u->ah_made++;
			return e->ah;
		}
	}
}

uint64_t rb_udp_ts_ns(const struct rb_udp *u, uint64_t a, uint64_t b)
{
	if (u->stamps == RB_UDP_TS_CYCLES) {
		/* the NIC's cycles, wrapping at its mask */
		if (!u->ts_khz)
			return 0;
		uint64_t d = (b - a) & u->ts_mask;
		return (uint64_t)((unsigned __int128)d * 1000000u / u->ts_khz);
	}
	return b > a ? b - a : 0;
}

/* Polls up to max (at most 16) completions of the receive CQ (recv) or
 * the send CQ into out, with their stamps: how many, or RB_EPOLL (u->err
 * set). */
static int poll_cq(struct rb_udp *u, int recv, struct rb_udp_wc *out, int max)
{
	struct ibv_cq_ex *x = recv ? u->rcqx : u->scqx;
	int n = 0;
	if (!x) {
		struct ibv_wc wc[16];
		n = ibv_poll_cq(recv ? u->rcq : u->scq, max < 16 ? max : 16, wc);
		for (int i = 0; i < n; i++)
			out[i] = (struct rb_udp_wc){.wr_id = wc[i].wr_id, .status = wc[i].status,
						    .byte_len = wc[i].byte_len, .src_qp = wc[i].src_qp,
						    .wc_flags = wc[i].wc_flags};
	} else {
		/* One completion per ibv_start_poll: never an ibv_next_poll that
		 * finds the CQ empty, then ibv_end_poll, which rxe before
		 * rdma-core 55 takes as one more (its consumer index passes the
		 * producer's: "rxe: fix completion queue consumer index
		 * overrun"). */
		while (n < max && n < 16) {
			struct ibv_poll_cq_attr attr = {0};
			int rc = ibv_start_poll(x, &attr);
			if (rc == ENOENT)
				break;
			if (rc != 0) {
				n = -1;
				break;
			}
			struct rb_udp_wc *w = &out[n++];
			*w = (struct rb_udp_wc){.wr_id = x->wr_id, .status = x->status};
			if (x->status == IBV_WC_SUCCESS) {
				if (recv) {
					w->byte_len = ibv_wc_read_byte_len(x);
					w->src_qp = ibv_wc_read_src_qp(x);
					w->wc_flags = ibv_wc_read_wc_flags(x);
				}
				if (u->stamps == RB_UDP_TS_WALLCLOCK)
					w->ts = ibv_wc_read_completion_wallclock_ns(x);
				else if (u->stamps == RB_UDP_TS_CYCLES)
					w->ts = ibv_wc_read_completion_ts(x);
			}
			ibv_end_poll(x);
		}
	}
	if (n < 0) {
		u->err = EIO;
		return RB_EPOLL;
	}
	if (n > 0 && recv && u->stamps == RB_UDP_TS_HOST) {
		/* a receive's: its poll (a send's is its post: send_msg) */
		uint64_t now = rb_mono_ns();
		for (int i = 0; i < n; i++)
			if (out[i].status == IBV_WC_SUCCESS)
				out[i].ts = now;
	}
	return n;
}

/* Sends len bytes of tx slot i to qpn through ah, signalled, as work
 * request wr_id. */
static int send_msg(struct rb_udp *u, uint32_t i, uint64_t wr_id, uint32_t len, struct ibv_ah *ah, uint32_t qpn,
		    uint32_t qkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)tx_slot(u, i), .length = len, .lkey = u->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | (len <= u->max_inline ? IBV_SEND_INLINE : 0)};
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	struct ibv_send_wr *bad = NULL;
	if (u->stamps == RB_UDP_TS_HOST)
		/* the host's stamp of a send is its post, before the message
		 * may leave (rxe sends it within the call): its completion's
		 * poll may come after the answer's */
		u->tx_ts[i] = rb_mono_ns();
	int rc = ibv_post_send(u->qp, &wr, &bad);
	if (rc != 0) {
		u->err = rc;
		return RB_EPOST;
	}
	u->tx_pending++;
	return 0;
}

/* The next free tx slot (one must be: tx_pending < nsend). */
static uint32_t take_slot(struct rb_udp *u)
{
	uint32_t t = u->tx_next;
	u->tx_next = (t + 1) % u->nsend;
	if (u->tx_ts)
		u->tx_ts[t] = 0;
	return t;
}

/* Sends the delay of the stamped answer p, whose send completed at
 * sent_ts: from its probe's receive to then. */
static int send_delay(struct rb_udp *u, const struct rb_udp_pend *p, uint64_t sent_ts)
{
	uint64_t d = rb_udp_ts_ns(u, p->rx_ts, sent_ts);
	struct rb_udp_msg m = {.magic = RB_UDP_MAGIC, .kind = RB_UDP_DELAY, .qkey = u->qkey,
			       .delay = d < UINT32_MAX ? (uint32_t)d : UINT32_MAX, .seq = p->seq};
	uint32_t t = take_slot(u);
	char *tx = tx_slot(u, t);
	memcpy(tx, &m, sizeof(m));
	memcpy(tx + sizeof(m), &p->cookie, sizeof(p->cookie));
	u->delays++;
	return send_msg(u, t, t | RB_UDP_WR_DELAY, RB_UDP_HDR + 8, p->ah, p->qpn, p->qkey);
}

/* Reaps send completions, keeping a stamped QP's stamps and sending the
 * delays of the stamped answers among them; with wait, until one slot is
 * free. */
static int reap_sends(struct rb_udp *u, int wait)
{
	struct rb_udp_wc wc[16];
	for (;;) {
		int got = poll_cq(u, 0, wc, 16);
		if (got < 0)
			return got;
		for (int i = 0; i < got; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				u->wc_status = wc[i].status;
				return RB_EWC;
			}
		}
		u->tx_pending -= (uint32_t)got;
		/* A delay's slot is taken after the slots of this batch before
		 * it were read (sends complete in order): see take_slot. */
		for (int i = 0; u->tx_ts && i < got; i++) {
			if (wc[i].wr_id & RB_UDP_WR_DELAY)
				continue;
			uint32_t slot = (uint32_t)wc[i].wr_id;
			if (!u->tx_ts[slot])
				/* (the host's stamp came at the post) 0 is "not
				 * yet": a stamp of 0 reads as 1 */
				u->tx_ts[slot] = wc[i].ts ? wc[i].ts : 1;
			struct rb_udp_pend *p = &u->pend[slot];
			if (p->live) {
				p->live = 0;
				u->npend--;
				int rc = send_delay(u, p, u->tx_ts[slot]);
				if (rc < 0)
					return rc;
			}
		}
		if (!wait || u->tx_pending < u->nsend)
			return 0;
	}
}

/* Sleeps until the receive CQ has a completion (1), the stop fd is readable
 * (0), or timeout_ms passes (0; -1: no limit); RB_EPOLL on an error. */
static int sleep_on_cq(struct rb_udp *u, int timeout_ms, int with_stop)
{
	struct pollfd fds[2] = {{.fd = u->ch->fd, .events = POLLIN}, {.fd = u->stopfd, .events = POLLIN}};
	int rc = poll(fds, with_stop ? 2 : 1, timeout_ms);
	if (rc < 0) {
		if (errno == EINTR)
			return 0;
		u->err = errno;
		return RB_EPOLL;
	}
	if (with_stop && (fds[1].revents & POLLIN))
		return 0;
	if (fds[0].revents & POLLIN) {
		struct ibv_cq *cq;
		void *ctx;
		if (ibv_get_cq_event(u->ch, &cq, &ctx) != 0) {
			u->err = errno;
			return RB_EPOLL;
		}
		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(u->rcq, 0) != 0) {
			u->err = EIO;
			return RB_EPOLL;
		}
		return 1;
	}
	return 0;
}

static int stopped(struct rb_udp *u)
{
	struct pollfd p = {.fd = u->stopfd, .events = POLLIN};
	return poll(&p, 1, 0) > 0;
}

int rb_udp_serve(struct rb_udp *u)
{
	struct rb_udp_wc wc[16];
	for (;;) {
		int got = poll_cq(u, 1, wc, 16);
		if (got < 0)
			return got;
		if (got == 0) {
			int rc;
			if (u->npend > 0) {
				/* stamped answers' sends complete soon: their
				 * delays follow, then it may sleep */
				if ((rc = reap_sends(u, 0)) < 0)
					return rc;
				if (u->npend > 0 && rb_mono_ns() < u->pend_until)
					continue;
				drop_delays(u);
			}
			if (stopped(u))
				return 0;
			rc = sleep_on_cq(u, -1, 1);
			if (rc < 0)
				return rc;
			if (rc == 0 && stopped(u))
				return 0;
			continue;
		}
		for (int i = 0; i < got; i++) {
			uint32_t slot = (uint32_t)wc[i].wr_id;
			if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
				return 0; /* the QP is going away */
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* a message that could not land (longer than a
				 * receive: a foreign one): counted, its receive
				 * posted again; no peer stops the answers */
				__atomic_add_fetch(&u->bad, 1, __ATOMIC_RELAXED);
				if (post_recv(u, slot) != 0) {
					u->wc_status = wc[i].status;
					return RB_EWC;
				}
				continue;
			}
			const char *rx = rx_slot(u, slot);
			struct rb_udp_msg m;
			uint32_t len = wc[i].byte_len > RB_UDP_GRH ? wc[i].byte_len - RB_UDP_GRH : 0;
			struct ibv_ah *ah = NULL;
			if (len >= RB_UDP_HDR && len <= u->size && (wc[i].wc_flags & IBV_WC_GRH)) {
				memcpy(&m, rx + RB_UDP_GRH, sizeof(m));
				if (m.magic == RB_UDP_MAGIC && m.kind == RB_UDP_REQ)
					ah = answer_ah(u, (const uint8_t *)rx);
			}
			if (!ah) {
				__atomic_add_fetch(&u->bad, 1, __ATOMIC_RELAXED);
			} else {
				int rc = reap_sends(u, 1);
				if (rc < 0)
					return rc;
				uint32_t t = take_slot(u);
				char *tx = tx_slot(u, t);
				memcpy(tx, rx + RB_UDP_GRH, len);
				m.kind = RB_UDP_RESP;
				m.flags &= (uint16_t)~RB_UDP_F_DELAY;
				if (u->pend && (m.flags & RB_UDP_F_STAMPS) && wc[i].ts && len >= RB_UDP_HDR + 8) {
					/* its delay follows, once the answer leaves */
					struct rb_udp_pend *p = &u->pend[t];
					*p = (struct rb_udp_pend){.rx_ts = wc[i].ts, .seq = m.seq, .ah = ah,
								  .qpn = wc[i].src_qp, .qkey = m.qkey, .live = 1};
					memcpy(&p->cookie, rx + RB_UDP_GRH + sizeof(m), sizeof(p->cookie));
					u->npend++;
					u->pend_until = rb_mono_ns() + RB_UDP_STAMP_WAIT_NS;
					m.flags |= RB_UDP_F_DELAY;
				}
				memcpy(tx, &m, sizeof(m));
				/* counted before it leaves: the prober may read the
				 * count as soon as the answer arrives */
				__atomic_add_fetch(&u->served, 1, __ATOMIC_RELEASE);
				if ((rc = send_msg(u, t, t, len, ah, wc[i].src_qp, m.qkey)) < 0)
					return rc;
			}
			if (post_recv(u, slot) != 0) {
				u->err = EIO;
				return RB_EPOST;
			}
		}
		int rc = reap_sends(u, 0);
		if (rc < 0)
			return rc;
	}
}

/* Polls the receive CQ until the answer of probe seq came (want_delay 0:
 * returns 1, its flags in *flags, its stamp in *ts, the poll's time in
 * *at) or its responder's delay (want_delay 1: returns 1, the delay in
 * *delay), counting what else arrives; spins while the time since since
 * is under spin_ns, then sleeps on the completion channel, until
 * deadline_ns (RB_ETIMEDOUT), or an RB_E* code. */
static int await_msg(struct rb_udp *u, uint64_t seq, int want_delay, uint64_t since, uint64_t spin_ns,
		     uint64_t deadline_ns, uint16_t *flags, uint64_t *ts, uint64_t *at, uint32_t *delay)
{
	struct rb_udp_wc wc[16];
	int answered = 0;
	for (;;) {
		if (want_delay && u->delay_seq == seq) {
			*delay = u->delay_ns;
			return 1;
		}
		int got = poll_cq(u, 1, wc, 16);
		if (got < 0)
			return got;
		uint64_t now = rb_mono_ns();
		for (int i = 0; i < got; i++) {
			uint32_t slot = (uint32_t)wc[i].wr_id;
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* as the responder's: counted, posted again */
				u->bad++;
				if (post_recv(u, slot) != 0) {
					u->wc_status = wc[i].status;
					return RB_EWC;
				}
				continue;
			}
			const char *rx = rx_slot(u, slot) + RB_UDP_GRH;
			uint32_t len = wc[i].byte_len > RB_UDP_GRH ? wc[i].byte_len - RB_UDP_GRH : 0;
			struct rb_udp_msg r;
			uint64_t cookie = 0;
			if (len >= sizeof(r) + sizeof(cookie)) {
				memcpy(&r, rx, sizeof(r));
				memcpy(&cookie, rx + sizeof(r), sizeof(cookie));
			} else {
				r.magic = 0;
			}
			if (r.magic != RB_UDP_MAGIC || (r.kind != RB_UDP_RESP && r.kind != RB_UDP_DELAY) ||
			    cookie != u->cookie) {
				u->bad++;
			} else if (r.kind == RB_UDP_DELAY) {
				/* kept for the wait of its probe, which may come
				 * after it (one batch); one of a probe given up is
				 * dropped at the next */
				if (r.seq == seq) {
					u->delay_seq = seq;
					u->delay_ns = r.delay;
				}
			} else if (r.seq == seq && !want_delay && !answered) {
				answered = 1;
				*flags = r.flags;
				*ts = wc[i].ts;
				*at = now;
			} else if (r.seq != seq) {
				u->late++; /* the answer of a probe given up */
			}
			if (post_recv(u, slot) != 0) {
				u->err = EIO;
				return RB_EPOST;
			}
		}
		if (answered)
			return 1;
		if (want_delay && u->delay_seq == seq)
			continue;
		if (now >= deadline_ns)
			return RB_ETIMEDOUT;
		if (got == 0 && now - since >= spin_ns) {
			/* long enough: sleep until the answer or the deadline */
			uint64_t left = deadline_ns - now;
			int rc = sleep_on_cq(u, (int)((left + 999999) / 1000000), 0);
			if (rc < 0)
				return rc;
		}
	}
}

/* The stamp of the send in tx slot t (*ts; 0 when none came), waiting
 * for its completion (reaping) until until_ns. 0 or an RB_E* code. */
static int sent_stamp(struct rb_udp *u, uint32_t t, uint64_t until_ns, uint64_t *ts)
{
	while (!u->tx_ts[t]) {
		int rc = reap_sends(u, 0);
		if (rc < 0)
			return rc;
		if (!u->tx_ts[t] && rb_mono_ns() >= until_ns)
			break;
	}
	*ts = u->tx_ts[t];
	return 0;
}

int64_t rb_udp_ping(struct rb_udp *u, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, uint64_t n,
		    uint64_t *samples, uint64_t *net, uint64_t spin_ns, uint64_t deadline_ns)
{
	u->done = 0;
	if (!u->cookie)
		u->cookie = rb_mono_ns() ^ ((uint64_t)u->qp->qp_num << 40) ^ 0x9e3779b97f4a7c15ull;
	int stamped = net && u->stamps != RB_UDP_TS_NONE;
	for (uint64_t k = 0; k < n; k++) {
		int rc = reap_sends(u, 1);
		if (rc < 0)
			return rc;
		uint32_t t = take_slot(u);
		char *tx = tx_slot(u, t);
		uint64_t seq = ++u->seq;
		struct rb_udp_msg m = {.magic = RB_UDP_MAGIC, .kind = RB_UDP_REQ,
				       .flags = stamped ? RB_UDP_F_STAMPS : 0, .qkey = u->qkey, .seq = seq};
		memcpy(tx, &m, sizeof(m));
		memcpy(tx + sizeof(m), &u->cookie, sizeof(u->cookie));
		uint64_t t0 = rb_mono_ns();
		if ((rc = send_msg(u, t, t, u->size, ah, qpn, qkey)) < 0)
			return rc;
		uint64_t sent_ts = 0, rx_ts = 0, at = 0;
		uint16_t flags = 0;
		if ((rc = await_msg(u, seq, 0, t0, spin_ns, deadline_ns, &flags, &rx_ts, &at, NULL)) < 0)
			return rc;
		samples[k] = at - t0;
		if (net) {
			net[k] = 0;
			uint32_t delay = UINT32_MAX;
			if (stamped && (flags & RB_UDP_F_DELAY)) {
				/* the probe's send completed before its answer came,
				 * or very soon after */
				if ((rc = sent_stamp(u, t, at + RB_UDP_STAMP_WAIT_NS, &sent_ts)) < 0)
					return rc;
				uint64_t until = at + RB_UDP_DELAY_WAIT_NS;
				rc = await_msg(u, seq, 1, at, spin_ns, until < deadline_ns ? until : deadline_ns, NULL,
					       NULL, NULL, &delay);
				if (rc < 0 && rc != RB_ETIMEDOUT)
					return rc;
			}
			uint64_t rtt = rb_udp_ts_ns(u, sent_ts, rx_ts);
			if (delay != UINT32_MAX && sent_ts && rx_ts && rtt > delay) {
				net[k] = rtt - delay;
				u->stamped++;
			}
		}
		u->done = k + 1;
	}
	return (int64_t)n;
}
