//go:build linux && cgo

#include "cm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>

int rb_cm_wait(struct rdma_event_channel *ch, int timeout_ms, struct rdma_cm_event **ev)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(ch, ev))
		return -errno;
	return 0;
}

static socklen_t to_sockaddr(const struct rb_cm_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(a->port);
		memcpy(&s->sin6_addr, a->addr, 16);
		return sizeof(*s);
	}
	struct sockaddr_in *s = (struct sockaddr_in *)ss;
	s->sin_family = AF_INET;
	s->sin_port = htons(a->port);
	memcpy(&s->sin_addr, a->addr, 4);
	return sizeof(*s);
}

static void from_sockaddr(const struct sockaddr *sa, struct rb_cm_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
		a->family = AF_INET6;
		a->port = ntohs(s->sin6_port);
		memcpy(a->addr, &s->sin6_addr, 16);
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		a->family = AF_INET;
		a->port = ntohs(s->sin_port);
		memcpy(a->addr, &s->sin_addr, 4);
	}
}

int rb_cm_bind(struct rdma_cm_id *id, const struct rb_cm_addr *a)
{
	struct sockaddr_storage ss;
	to_sockaddr(a, &ss);
	return rdma_bind_addr(id, (struct sockaddr *)&ss);
}

int rb_cm_resolve_addr(struct rdma_cm_id *id, const struct rb_cm_addr *src, const struct rb_cm_addr *dst, int timeout_ms)
{
	struct sockaddr_storage s, d;
	to_sockaddr(src, &s);
	to_sockaddr(dst, &d);
	return rdma_resolve_addr(id, (struct sockaddr *)&s, (struct sockaddr *)&d, timeout_ms);
}

void rb_cm_addrs(struct rdma_cm_id *id, struct rb_cm_addr *src, struct rb_cm_addr *dst, uint8_t sgid[16])
{
	from_sockaddr(rdma_get_local_addr(id), src);
	from_sockaddr(rdma_get_peer_addr(id), dst);
	memcpy(sgid, id->route.addr.addr.ibaddr.sgid.raw, 16);
}

const char *rb_cm_device(struct rdma_cm_id *id)
{
	if (!id->verbs || !id->verbs->device)
		return NULL;
	return ibv_get_device_name(id->verbs->device);
}

void rb_cm_event_fields(struct rdma_cm_event *ev, struct rb_cm_event *out)
{
	memset(out, 0, sizeof(*out));
	out->event = ev->event;
	out->status = ev->status;
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	if (ev->id && ev->id->ps == RDMA_PS_UDP) {
		out->priv = ev->param.ud.private_data;
		out->priv_len = ev->param.ud.private_data_len;
		out->ud_qpn = ev->param.ud.qp_num;
		out->ud_qkey = ev->param.ud.qkey;
		out->ud_ah = ev->param.ud.ah_attr;
	} else {
		out->priv = ev->param.conn.private_data;
		out->priv_len = ev->param.conn.private_data_len;
		out->responder_resources = ev->param.conn.responder_resources;
		out->initiator_depth = ev->param.conn.initiator_depth;
	}
}

int rb_cm_set_tos(struct rdma_cm_id *id, uint8_t tos)
{
	return rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos));
}

int rb_cm_connect(struct rdma_cm_id *id, uint32_t qpn, const void *priv, uint8_t priv_len,
		  uint8_t responder_resources, uint8_t initiator_depth)
{
	struct rdma_conn_param p;
	memset(&p, 0, sizeof(p));
	p.qp_num = qpn;
	p.private_data = priv;
	p.private_data_len = priv_len;
	p.responder_resources = responder_resources;
	p.initiator_depth = initiator_depth;
	p.retry_count = 6; /* as the QPs' own: 7 would retry for ever on Soft-RoCE */
	p.rnr_retry_count = 7;
	return rdma_connect(id, &p);
}

int rb_cm_accept(struct rdma_cm_id *id, uint32_t qpn,
		 uint8_t responder_resources, uint8_t initiator_depth)
{
	struct rdma_conn_param p;
	memset(&p, 0, sizeof(p));
	p.qp_num = qpn;
	p.responder_resources = responder_resources;
	p.initiator_depth = initiator_depth;
	p.retry_count = 6;
	p.rnr_retry_count = 7;
	return rdma_accept(id, &p);
}
