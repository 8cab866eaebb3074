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

/* A probe message's header, in the sender's byte order (both ends are the
 * same program; a foreign message fails the magic and is counted bad). */
struct rb_udp_msg {
	uint32_t magic;
	uint16_t kind;
	uint16_t pad;
	uint32_t qkey;   /* the sender's Q_Key: the answer's */
	uint32_t pad2;
	uint64_t seq;
	/* cookie: the prober's, so that an answer meant for another QP that
	 * reused this QPN is not taken */
};

struct rb_udp_ah {
	uint8_t key[17]; /* source GID, traffic class */
	uint8_t used;
	struct ibv_ah *ah;
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

int rb_udp_open(struct ibv_pd *pd, uint8_t port, uint8_t gid_index, uint32_t size, uint32_t nrecv,
		uint32_t nsend, uint32_t qkey, struct rb_udp **out, const char **where)
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
	u->rcq = ibv_create_cq(pd->context, (int)nrecv, NULL, u->ch, 0);
	if (!u->rcq)
		FAIL("create cq", errno);
	u->scq = ibv_create_cq(pd->context, (int)nsend, NULL, NULL, 0);
	if (!u->scq)
		FAIL("create cq", errno);
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
		/* full, or none yet: start again (peers come and go) */
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

/* Reaps send completions; with wait, until one slot is free. */
static int reap_sends(struct rb_udp *u, int wait)
{
	struct ibv_wc wc[16];
	for (;;) {
		int got = ibv_poll_cq(u->scq, 16, wc);
		if (got < 0) {
			u->err = EIO;
			return RB_EPOLL;
		}
		for (int i = 0; i < got; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				u->wc_status = wc[i].status;
				return RB_EWC;
			}
		}
		u->tx_pending -= (uint32_t)got;
		if (!wait || u->tx_pending < u->nsend)
			return 0;
	}
}

/* Sends len bytes of tx slot i to qpn through ah, signalled. */
static int send_msg(struct rb_udp *u, uint32_t i, uint32_t len, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)tx_slot(u, i), .length = len, .lkey = u->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | (len <= u->max_inline ? IBV_SEND_INLINE : 0)};
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(u->qp, &wr, &bad);
	if (rc != 0) {
		u->err = rc;
		return RB_EPOST;
	}
	u->tx_pending++;
	return 0;
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
	struct ibv_wc wc[16];
	for (;;) {
		int got = ibv_poll_cq(u->rcq, 16, wc);
		if (got < 0) {
			u->err = EIO;
			return RB_EPOLL;
		}
		if (got == 0) {
			if (stopped(u))
				return 0;
			int rc = sleep_on_cq(u, -1, 1);
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
				uint32_t t = u->tx_next;
				u->tx_next = (t + 1) % u->nsend;
				char *tx = tx_slot(u, t);
				memcpy(tx, rx + RB_UDP_GRH, len);
				m.kind = RB_UDP_RESP;
				memcpy(tx, &m, sizeof(m));
				/* counted before it leaves: the prober may read the
				 * count as soon as the answer arrives */
				__atomic_add_fetch(&u->served, 1, __ATOMIC_RELEASE);
				if ((rc = send_msg(u, t, len, ah, wc[i].src_qp, m.qkey)) < 0)
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

int64_t rb_udp_ping(struct rb_udp *u, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, uint64_t n,
		    uint64_t *samples, uint64_t spin_ns, uint64_t deadline_ns)
{
	struct ibv_wc wc[16];
	u->done = 0;
	if (!u->cookie)
		u->cookie = rb_mono_ns() ^ ((uint64_t)u->qp->qp_num << 40) ^ 0x9e3779b97f4a7c15ull;
	for (uint64_t k = 0; k < n; k++) {
		int rc = reap_sends(u, 1);
		if (rc < 0)
			return rc;
		uint32_t t = u->tx_next;
		u->tx_next = (t + 1) % u->nsend;
		char *tx = tx_slot(u, t);
		uint64_t seq = ++u->seq;
		struct rb_udp_msg m = {.magic = RB_UDP_MAGIC, .kind = RB_UDP_REQ, .qkey = u->qkey, .seq = seq};
		memcpy(tx, &m, sizeof(m));
		memcpy(tx + sizeof(m), &u->cookie, sizeof(u->cookie));
		uint64_t t0 = rb_mono_ns();
		if ((rc = send_msg(u, t, u->size, ah, qpn, qkey)) < 0)
			return rc;
		int answered = 0;
		uint64_t now = t0;
		while (!answered) {
			int got = ibv_poll_cq(u->rcq, 16, wc);
			now = rb_mono_ns();
			if (got < 0) {
				u->err = EIO;
				return RB_EPOLL;
			}
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
				if (r.magic != RB_UDP_MAGIC || r.kind != RB_UDP_RESP || cookie != u->cookie)
					u->bad++;
				else if (r.seq == seq)
					answered = 1;
				else
					u->late++; /* the answer of a probe given up */
				if (post_recv(u, slot) != 0) {
					u->err = EIO;
					return RB_EPOST;
				}
			}
			if (answered)
				break;
			if (now >= deadline_ns)
				return RB_ETIMEDOUT;
			if (got == 0 && now - t0 >= spin_ns) {
				/* long enough: sleep until the answer or the deadline */
				uint64_t left = deadline_ns - now;
				int ms = (int)((left + 999999) / 1000000);
				rc = sleep_on_cq(u, ms, 0);
				if (rc < 0)
					return rc;
			}
		}
		samples[k] = now - t0;
		u->done = k + 1;
	}
	return (int64_t)n;
}
