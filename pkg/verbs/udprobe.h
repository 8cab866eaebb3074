//go:build linux && cgo

/* The UD probe: one UD QP that answers every peer's probes, and UD QPs
 * that probe peers through address handles (as R-Pingmesh does). Its
 * loops are C: Go calls rb_udp_serve once (it returns when stopped) and
 * rb_udp_ping once per probe, never once per message. */
#ifndef RDMABENCH_UDPROBE_H
#define RDMABENCH_UDPROBE_H

#include <infiniband/verbs.h>
#include <stdint.h>

/* The room a UD receive keeps for the GRH (or, on RoCE v2 over IPv4, 20
 * bytes of zeros and the IPv4 header). */
#define RB_UDP_GRH 40
/* A probe message's header; the message is at least this long. */
#define RB_UDP_HDR 24

/* Which clock stamps the QP's completions (struct rb_udp's stamps). */
enum {
	RB_UDP_TS_NONE = 0,
	RB_UDP_TS_WALLCLOCK = 1, /* the NIC's, in ns (ibv_wc_read_completion_wallclock_ns) */
	RB_UDP_TS_CYCLES = 2,    /* the NIC's, in its cycles (ibv_wc_read_completion_ts) */
	RB_UDP_TS_HOST = 3,      /* the host's CLOCK_MONOTONIC, a receive's at its poll, a
				  * send's at its post: tests of the stamps' exchange on
				  * a device that has none */
};

struct rb_udp_ah;
struct rb_udp_pend;

struct rb_udp {
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	struct ibv_cq *scq, *rcq;
	/* the same CQs when made extended (ibv_create_cq_ex), else NULL */
	struct ibv_cq_ex *scqx, *rcqx;
	struct ibv_comp_channel *ch; /* rcq's */
	/* completion stamps: RB_UDP_TS_*; for RB_UDP_TS_CYCLES, the clock's
	 * mask (completion_timestamp_mask) and rate (hca_core_clock, kHz) */
	int stamps;
	uint64_t ts_mask, ts_khz;
	uint64_t *tx_ts;             /* a stamped QP's: per send slot, its completion's stamp */
	struct ibv_mr *mr;
	char *buf;                   /* nrecv receive slots, then nsend send slots */
	uint8_t port;
	uint8_t gid_index;
	uint32_t size;               /* message size */
	uint32_t nrecv, nsend;
	uint32_t qkey;
	uint32_t max_inline;
	uint32_t tx_next, tx_pending;
	int stopfd;                  /* an eventfd: rb_udp_stop makes it readable */
	/* prober */
	uint64_t seq, cookie;
	uint64_t done;               /* ping-pongs of the last rb_udp_ping */
	uint64_t delay_seq;          /* the probe whose responder's delay came */
	uint32_t delay_ns;
	/* responder: per send slot, the stamped answer in it (whose delay
	 * follows once it leaves); how many are pending */
	struct rb_udp_pend *pend;
	uint32_t npend;
	uint64_t pend_until;         /* when the last one stops being waited for */
	/* responder: address handles of the peers answered, by source GID and
	 * traffic class */
	struct rb_udp_ah *ahs;
	uint32_t nah, cap_ah;
	/* counters, read by Go between calls (served: by any thread; stored
	 * atomically) */
	uint64_t served, bad, late, ah_made;
	/* responder: the delays sent after stamped answers; prober: the
	 * ping-pongs whose network time it has (both ends' stamps) */
	uint64_t delays, stamped;
	/* the last error's details */
	int err, wc_status;
};

/* Creates the QP (UD, moved to RTS), its CQs (the receive CQ with a
 * completion channel), a buffer of nrecv receives and nsend sends of size
 * bytes and its MR, and posts the receives. With ts_mask not 0 (the
 * device stamps completions: ibv_query_device_ex's
 * completion_timestamp_mask, its clock ts_khz kHz), the CQs stamp their
 * completions: in ns where the device converts, else in its cycles;
 * u->stamps says which, RB_UDP_TS_NONE where neither CQ could be made so.
 * host_stamps: the host's clock stamps them instead (tests). 0 or an errno;
 * *where names the step that failed. */
int rb_udp_open(struct ibv_pd *pd, uint8_t port, uint8_t gid_index, uint32_t size, uint32_t nrecv,
		uint32_t nsend, uint32_t qkey, uint64_t ts_mask, uint64_t ts_khz, int host_stamps,
		struct rb_udp **out, const char **where);
void rb_udp_close(struct rb_udp *u);
uint32_t rb_udp_qpn(struct rb_udp *u);

/* Answers every probe that arrives, to its sender, until rb_udp_stop
 * (returns 0) or an error (RB_E* of rb.h). Sleeps on the completion
 * channel while nothing arrives. A stamped QP answers a probe that asks
 * for its delay (a stamped prober's) in two messages: the answer, then,
 * once the answer's send completes, the time from the probe's receive
 * completion to the answer's send completion (its own clock's, in ns). */
int rb_udp_serve(struct rb_udp *u);
/* Makes rb_udp_serve return (from another thread). */
void rb_udp_stop(struct rb_udp *u);

/* An address handle toward dgid, from this QP's GID index. 0 or an errno. */
int rb_udp_ah(struct rb_udp *u, const uint8_t *dgid, uint8_t tclass, uint8_t hop_limit, uint8_t sl,
	      struct ibv_ah **out);

/* n ping-pongs with the responder (qpn, qkey) behind ah: each sample the
 * round trip in ns (CLOCK_MONOTONIC), from the post of the probe to the
 * poll that found its answer. It spins on the receive CQ for spin_ns, then
 * sleeps on the completion channel, until deadline_ns (CLOCK_MONOTONIC).
 * A stamped QP asks for the responder's delay and, with net not NULL,
 * writes net[k]: the network's round trip in ns (R-Pingmesh's), the time
 * from the probe's send completion to its answer's receive completion
 * (this NIC's clock) less the responder's delay (its NIC's), or 0 where a
 * stamp or the delay is missing (a responder that does not stamp). Returns
 * n, or an RB_E* code of rb.h (RB_ETIMEDOUT: the deadline passed); u->done
 * is the ping-pongs done either way. */
int64_t rb_udp_ping(struct rb_udp *u, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, uint64_t n,
		    uint64_t *samples, uint64_t *net, uint64_t spin_ns, uint64_t deadline_ns);

/* The ns from stamp a to stamp b of u's clock (0 where b is not later). */
uint64_t rb_udp_ts_ns(const struct rb_udp *u, uint64_t a, uint64_t b);

#endif
