//go:build linux && cgo

/* C side of pkg/verbs: small wrappers cgo cannot call directly, buffers
 * allocated outside the Go heap, the clock, and the timed loops. Go calls the
 * loops once per batch of iterations, never once per work request. */
#ifndef RDMABENCH_RB_H
#define RDMABENCH_RB_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <stddef.h>

/* ---- wrappers ---------------------------------------------------------- */

/* ibv_query_port is a function-like macro in rdma-core's headers. */
int rb_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
/* Page-aligned, zeroed memory from C; 0 or an errno. */
int rb_alloc(size_t len, void **out);
void rb_free(void *p);
/* len bytes (rounded up to whole pages) of page-byte huge pages, mapped with
 * MAP_HUGETLB | log2(page) << MAP_HUGE_SHIFT, zeroed; *mapped is the length
 * mapped. 0 or an errno (ENOMEM: not enough free huge pages). */
int rb_alloc_huge(size_t len, size_t page, void **out, size_t *mapped);
void rb_free_huge(void *p, size_t mapped);
/* An address as a pointer (a GPU's device address among them). */
static inline char *rb_ptr(uintptr_t a) { return (char *)a; }
/* ibv_reg_mr of memory at an address given as a number (a GPU's device
 * address, or host memory), again while a signal interrupts it (EINTR: a
 * registration for on-demand paging faults the pages in, seen on rxe of
 * Linux 7.2, and a Go process's threads get signals, the runtime's
 * preemption among them), up to 100 times. */
struct ibv_mr *rb_reg_mr_addr(struct ibv_pd *pd, uintptr_t addr, size_t len, int access);
/* ibv_query_device_ex into attr (zeroed first: its on-demand paging and
 * completion timestamp capabilities among them); 0 or an errno. */
int rb_query_device_ex(struct ibv_context *ctx, struct ibv_device_attr_ex *attr);

/* A work request in flat form, so Go need not touch C unions. */
struct rb_wr_desc {
	uint64_t id;
	int opcode;          /* enum ibv_wr_opcode */
	unsigned flags;      /* IBV_SEND_* */
	uint32_t imm;        /* host order */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t compare;
	uint64_t swap_add;
	int nsge;
	int sge_off;         /* index of the first SGE in the sges array */
};

/* Builds n chained send WRs from descs into wrs (capacity n) and posts them
 * with one ibv_post_send. On failure returns the errno and sets *bad_index. */
int rb_post_send(struct ibv_qp *qp, struct rb_wr_desc *descs, int n, struct ibv_sge *sges,
		 struct ibv_send_wr *wrs, struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey,
		 int *bad_index);
int rb_post_recv(struct ibv_qp *qp, uint64_t *ids, int *nsges, struct ibv_sge *sges, int n,
		 struct ibv_recv_wr *wrs, int *bad_index);

/* A work completion in flat form. */
struct rb_wc {
	uint64_t id;
	int status, opcode;
	uint32_t vendor_err, byte_len, imm, qp_num, src_qp;
	int has_imm;
};

/* Polls up to n completions into out; returns the count or -errno. */
int rb_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *scratch, struct rb_wc *out);

/* ---- clock ------------------------------------------------------------- */

/* Raw ticks of the loops' clock: TSC cycles, or CLOCK_MONOTONIC ns. */
uint64_t rb_ticks(void);
/* 1 where this build can read a TSC. */
int rb_clock_has_tsc(void);
/* Chooses the TSC (on) or CLOCK_MONOTONIC; called once, before any loop. */
void rb_clock_use_tsc(int on);
/* One calibration point: CLOCK_MONOTONIC, then the TSC, then CLOCK_MONOTONIC
 * again; the narrower the bracket, the better the point. */
void rb_clock_bracket(uint64_t *m0, uint64_t *t, uint64_t *m1);
/* The two reads of a bracket, one call each. */
uint64_t rb_mono_ns(void);
uint64_t rb_read_tsc(void);
/* Measures the clock: reported resolution (ns), smallest observed step and
 * mean read cost (ticks). */
void rb_clock_measure(double *reported_ns, uint64_t *step_ticks, double *cost_ticks);

/* ---- timed loops ------------------------------------------------------- */

enum rb_kind {
	RB_LAT_WRITE = 1, /* RDMA WRITE ping-pong; each side spins on its rx buffer's last byte */
	RB_LAT_SEND = 2,  /* SEND/RECV ping-pong */
	RB_LAT_POST = 3,  /* READ or atomic, post to completion (initiator only) */
	RB_BW_SEND = 4,   /* windowed posting of WRITE, READ, SEND or atomics */
	RB_BW_RECV = 5,   /* receiver side of SEND bandwidth: count and repost */
};

enum rb_role { RB_INITIATOR = 0, RB_RESPONDER = 1 };

/* Loop results besides 0. */
enum {
	RB_EWC = -10000,      /* a work completion failed: see wc_* fields */
	RB_ETIMEDOUT = -10001, /* no progress within idle_timeout_ticks */
	RB_EABORTED = -10002,  /* stop was set */
	RB_EPOST = -10003,     /* ibv_post_send/recv failed: see err */
	RB_EPOLL = -10004,     /* ibv_poll_cq or the completion channel failed: see err */
};

struct rb_qp {
	struct ibv_qp *qp;
	struct ibv_ah *ah;       /* UD only */
	uint32_t remote_qpn;     /* UD only */
	uint32_t remote_qkey;    /* UD only */
	uint64_t raddr;          /* WRITE/READ/atomic target */
	uint32_t rkey;
	/* bandwidth state */
	uint64_t posted;
	uint64_t completed;
	uint64_t target;
	uint32_t slot, rslot;    /* next send and receive slot of the cycle */
	/* pacing: when the next message may be posted, in ticks since
	 * pace_base scaled by 2^RB_PACE_SHIFT */
	uint64_t pace_next;
};

/* Fractional bits of the pacing schedule's fixed-point ticks. */
#define RB_PACE_SHIFT 12

/* A bandwidth sender's checkpoint: where it stood after a poll that reaped
 * completions (the stretches between two are perftest's BW peak's). */
struct rb_cp {
	uint64_t tick;
	uint64_t posted;     /* WRs posted since the counters were reset, all QPs */
	uint64_t completed;  /* total_completed then */
};

/* Checkpoints a sender keeps at most: when full, every other one goes and
 * the least gap between two doubles, so they always span the whole run. */
#define RB_CP_MAX 256

struct rb_loop {
	/* configuration, filled in by Go before rb_loop_init */
	int kind;
	int role;
	int opcode;              /* enum ibv_wr_opcode */
	int is_ud;
	int nqp;
	struct rb_qp *qps;       /* nqp entries */
	struct ibv_cq *scq, *rcq;
	struct ibv_comp_channel *sch, *rch; /* non-NULL: event-driven completion */
	char *tx;                /* local source buffer (size bytes) */
	uint32_t tx_lkey;
	char *rx;                /* local destination / receive buffer */
	uint32_t rx_lkey;
	uint32_t size;           /* message size */
	uint32_t rx_size;        /* receive length (size, or size+40 on UD) */
	int use_inline;
	int tx_depth;            /* max outstanding WRs per QP */
	int rx_depth;            /* receives kept posted per QP */
	int cq_mod;              /* signal one WR in cq_mod */
	int post_list;           /* WRs per ibv_post_send call */
	/* Bandwidth with small messages: each send (and receive) moves one slot
	 * of stride bytes on, through slots slots, in the local and the remote
	 * buffer, as perftest cycles through a page a cache line at a time, so
	 * that successive operations do not hit one word. slots 0: no cycle. */
	uint32_t cycle_stride, cycle_slots;
	uint32_t rx_cycle_stride, rx_cycle_slots;
	uint64_t cmp, swap_add;  /* atomics */
	uint64_t idle_timeout_ticks;
	/* Latency waits: one that has lasted nap_after_ticks sleeps nap_ns
	 * between looks (0: spins throughout, as perftest's loops do). */
	uint64_t nap_after_ticks;
	long nap_ns;
	uint64_t total;          /* latency: planned iterations; RB_BW_RECV: receives expected (0: until stop) */
	/* Software rate limiter of RB_BW_SEND: each QP posts one message per
	 * pace_gap (ticks scaled by 2^RB_PACE_SHIFT) at most, and after a stall
	 * catches up at most pace_burst messages. 0: no pacing. */
	uint64_t pace_gap;
	uint64_t pace_burst;

	/* state */
	volatile int stop;
	uint64_t iter;           /* latency iterations done */
	int pending_sig;         /* signalled sends not yet polled */
	uint64_t first_tick, last_tick; /* bandwidth: first post, last completion */
	uint64_t progress_tick;  /* bandwidth: last progress, across calls (idle timeout) */
	uint64_t pace_base;      /* pacing: the tick its schedule counts from */
	/* total_completed and last_tick are stored atomically by the sender,
	 * so that rb_loop_snapshot may read them from another thread */
	uint64_t total_completed;
	uint64_t total_recv_bytes;
	uint64_t stop_completed; /* bandwidth sender: rb_bw_run returns 0 once total_completed reaches it (0: never) */
	/* Bandwidth sender: its checkpoints (RB_CP_MAX entries, allocated by
	 * rb_loop_init), taken after a poll that reaped completions at least
	 * cp_gap ticks after the last one (cp_last); posted_total counts the WRs
	 * posted since the counters were reset. One compare per poll, one add
	 * per post call. */
	struct rb_cp *cps;
	int cp_n;
	uint64_t cp_gap, cp_last;
	uint64_t posted_total;

	/* error details */
	int err;
	int wc_status, wc_opcode;
	uint32_t wc_vendor, wc_qpn;

	/* arrays allocated by rb_loop_init */
	struct ibv_send_wr *wrs; /* nqp * post_list */
	struct ibv_sge *sges;    /* nqp * post_list */
	struct ibv_recv_wr *rwrs;/* nqp */
	struct ibv_sge *rsges;   /* nqp */
	struct ibv_wc wcs[16];
};

/* Allocates the loop's work-request arrays; 0 or an errno. */
int rb_loop_init(struct rb_loop *l);
void rb_loop_destroy(struct rb_loop *l);
/* Asks a running loop to stop at its next check (from another thread). */
void rb_loop_stop(struct rb_loop *l);
/* Posts n receives on every QP (before the peer starts sending). */
int rb_post_recvs(struct rb_loop *l, int n);
/* Posts again the receive whose completion carried wr_id (its QP and buffer
 * slot), outside the timed loops. */
int rb_repost_recv(struct rb_loop *l, uint64_t wr_id);
/* Latency: runs up to n iterations, writing each RTT (in ticks, as the
 * difference of two reads, which may wrap if the clock stepped back) to
 * samples when non-NULL; the initiator also stops after the first sample that
 * ends at or after the tick until (0: no deadline). Returns the number run
 * (>= 0) or an RB_E* code. */
int64_t rb_lat_run(struct rb_loop *l, uint64_t n, uint64_t *samples, uint64_t until);
/* Bandwidth sender: posts and polls until every QP reached its target (returns
 * 1) or the tick until passed (returns 0), or an RB_E* code. */
int rb_bw_run(struct rb_loop *l, uint64_t until);
/* Bandwidth sender, duration mode: stop posting new work; targets become what
 * was posted, rounded up to a signalled WR. */
void rb_bw_finish(struct rb_loop *l);
/* SEND bandwidth receiver: polls, reposts and counts until total receives
 * arrived (returns 1), the tick until passed (0), or stop (1). */
/* Reads a running sender's completions and the tick of the last one (from
 * another thread). */
void rb_loop_snapshot(struct rb_loop *l, uint64_t *completed, uint64_t *last_tick);
/* Sets the receives a running receiver waits for (from another thread). */
void rb_loop_expect(struct rb_loop *l, uint64_t total);
int rb_bw_recv_run(struct rb_loop *l, uint64_t until);

#endif
