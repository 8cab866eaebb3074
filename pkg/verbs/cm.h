//go:build linux && cgo

/* C side of pkg/verbs' rdma_cm support (librdmacm): what cgo cannot reach
 * directly (sockaddrs, the unions of events and addresses), and waiting for
 * an event with a timeout. Connection setup only: nothing here runs in a
 * timed loop. */
#ifndef RDMABENCH_CM_H
#define RDMABENCH_CM_H

#include <rdma/rdma_cma.h>
#include <stdint.h>

/* An IP address and port in flat form: family AF_INET or AF_INET6, addr
 * the 4 or 16 address bytes (network order), port in host order. */
struct rb_cm_addr {
	int family;
	uint8_t addr[16];
	uint16_t port;
};

/* Waits up to timeout_ms for the next event of ch: 0 and *ev, or a
 * negative errno (-ETIMEDOUT when none came). */
int rb_cm_wait(struct rdma_event_channel *ch, int timeout_ms, struct rdma_cm_event **ev);

/* rdma_bind_addr, rdma_resolve_addr with flat addresses; 0 or -1 (errno). */
int rb_cm_bind(struct rdma_cm_id *id, const struct rb_cm_addr *a);
int rb_cm_resolve_addr(struct rdma_cm_id *id, const struct rb_cm_addr *src, const struct rb_cm_addr *dst, int timeout_ms);

/* The id's source and destination addresses, and the source GID of its
 * route (on RoCE derived from the source address). */
void rb_cm_addrs(struct rdma_cm_id *id, struct rb_cm_addr *src, struct rb_cm_addr *dst, uint8_t sgid[16]);

/* The name of the device the id is bound to, or NULL. */
const char *rb_cm_device(struct rdma_cm_id *id);

/* An event's fields in flat form. priv points into the event: copy it
 * before acknowledging the event. */
struct rb_cm_event {
	int event;
	int status;
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	const void *priv;
	uint8_t priv_len;
	/* connected port spaces */
	uint8_t responder_resources, initiator_depth;
	/* RDMA_PS_UDP */
	uint32_t ud_qpn, ud_qkey;
	struct ibv_ah_attr ud_ah;
};
void rb_cm_event_fields(struct rdma_cm_event *ev, struct rb_cm_event *out);

/* rdma_set_option(RDMA_OPTION_ID_TOS). */
int rb_cm_set_tos(struct rdma_cm_id *id, uint8_t tos);

/* rdma_connect and rdma_accept for a QP the caller moves through its
 * states itself (not associated with the id). A UD QP's Q_Key is rdma_cm's
 * (RDMA_UDP_QKEY). */
int rb_cm_connect(struct rdma_cm_id *id, uint32_t qpn, const void *priv, uint8_t priv_len,
		  uint8_t responder_resources, uint8_t initiator_depth);
int rb_cm_accept(struct rdma_cm_id *id, uint32_t qpn,
		 uint8_t responder_resources, uint8_t initiator_depth);

#endif
