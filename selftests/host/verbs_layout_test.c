// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * verbs_layout_test.c - prove userspace/libsrx/verbs-private.h and srx-abi.h
 * against the libibverbs installed on this machine. No RDMA device needed.
 *
 * libsrx declares libibverbs' private provider ABI itself, and a mistake
 * there is not a compile error but memory corruption inside libibverbs. So
 * this test plays provider to the real library, in one process:
 *
 *  1. A fake struct verbs_device (our declaration) goes to the real
 *     verbs_open_device(), which calls our alloc_context. That one uses the
 *     real verbs_init_and_alloc_context() on a pipe (libibverbs gets the
 *     write end as its command fd), runs ibv_cmd_get_context() and installs
 *     with the real verbs_set_ops() a verbs_context_ops whose 76 members are
 *     76 distinct sentinels.
 *
 *  2. Every op is then reached through the PUBLIC libibverbs entry point an
 *     application would use (ibv_alloc_pd(), ibv_poll_cq(), ...), on fake
 *     objects, and must land in exactly its own sentinel, exactly once. A
 *     member out of order or missing in our struct sends the call elsewhere.
 *
 *  3. The ioctl() libibverbs tries first fails with ENOTTY on a pipe, so it
 *     falls back to write(): the test reads each command back from the pipe
 *     and checks it against the kernel uAPI structures (lengths, word
 *     counts, the response pointer, and srx's payload right after the core
 *     part). The response buffers are prefilled where libibverbs copies
 *     from them, which checks the other direction.
 *
 *  4. ibv_close_device() ends in our free_context, which must give back
 *     every file descriptor and the device reference.
 *
 * Not called here, because on a pipe they would read an unwritten
 * response and wait or loop on garbage: ibv_cmd_destroy_cq/_qp/_srq,
 * ibv_cmd_poll_cq, ibv_cmd_post_send/_recv, ibv_query_gid_type. Their
 * prototypes are still checked to be exported as IBVERBS_PRIVATE_34.
 *
 * Output is TAP 13; exit status 0 iff every test passed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srx-abi.h"

#define UNUSED __attribute__((unused))

/* ------------------------------------------------------------------ */
/* TAP                                                                */
/* ------------------------------------------------------------------ */

static unsigned int tap_count, tap_failed;

static void tap(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	if (!ok)
		tap_failed++;
	printf("%sok %u ", ok ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Inside a test: note a failed condition, keep going, report at the end. */
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("#   line %d: %s\n", __LINE__, #cond);          \
			ok = false;                                            \
		}                                                              \
	} while (0)

/* ------------------------------------------------------------------ */
/* The 76 ops, in rdma-core v44.0 order                               */
/* ------------------------------------------------------------------ */

#define VERBS_OPS(X)                                                           \
	X(advise_mr) X(alloc_dm) X(alloc_mw) X(alloc_null_mr)                  \
	X(alloc_parent_domain) X(alloc_pd) X(alloc_td) X(async_event)          \
	X(attach_counters_point_flow) X(attach_mcast) X(bind_mw)               \
	X(close_xrcd) X(cq_event) X(create_ah) X(create_counters)              \
	X(create_cq) X(create_cq_ex) X(create_flow) X(create_flow_action_esp)  \
	X(create_qp) X(create_qp_ex) X(create_rwq_ind_table) X(create_srq)     \
	X(create_srq_ex) X(create_wq) X(dealloc_mw) X(dealloc_pd)              \
	X(dealloc_td) X(dereg_mr) X(destroy_ah) X(destroy_counters)            \
	X(destroy_cq) X(destroy_flow) X(destroy_flow_action) X(destroy_qp)     \
	X(destroy_rwq_ind_table) X(destroy_srq) X(destroy_wq) X(detach_mcast)  \
	X(free_context) X(free_dm) X(get_srq_num) X(import_dm) X(import_mr)    \
	X(import_pd) X(modify_cq) X(modify_flow_action_esp) X(modify_qp)       \
	X(modify_qp_rate_limit) X(modify_srq) X(modify_wq) X(open_qp)          \
	X(open_xrcd) X(poll_cq) X(post_recv) X(post_send) X(post_srq_ops)      \
	X(post_srq_recv) X(query_device_ex) X(query_ece) X(query_port)         \
	X(query_qp) X(query_qp_data_in_order) X(query_rt_values)               \
	X(query_srq) X(read_counters) X(reg_dm_mr) X(reg_dmabuf_mr) X(reg_mr)  \
	X(req_notify_cq) X(rereg_mr) X(resize_cq) X(set_ece) X(unimport_dm)    \
	X(unimport_mr) X(unimport_pd)

enum op {
#define X(name) OP_##name,
	VERBS_OPS(X)
#undef X
	OP_COUNT
};

static const char *const op_name[OP_COUNT] = {
#define X(name) [OP_##name] = #name,
	VERBS_OPS(X)
#undef X
};

/* The list above and the declaration agree on every member's slot. */
#define X(name)                                                                \
	_Static_assert(offsetof(struct verbs_context_ops, name) ==             \
		       OP_##name * sizeof(void (*)(void)), #name);
VERBS_OPS(X)
#undef X
_Static_assert(OP_COUNT == VERBS_PRIV_CONTEXT_OPS_COUNT, "76 ops");

/* ------------------------------------------------------------------ */
/* Fake provider state                                                */
/* ------------------------------------------------------------------ */

/* The provider's context: verbs_context deliberately not first. */
struct test_context {
	uint64_t before[5];
	struct verbs_context ibv_ctx;
	uint32_t after;
};

struct test_device {
	struct verbs_device vdev;
	uint32_t marker;
};

/* Objects the sentinels hand out and the public calls act on. */
static struct {
	struct ibv_pd pd;
	struct verbs_mr vmr;
	struct verbs_cq vcq;
	struct verbs_qp vqp;
	struct ibv_ah ah;
	struct ibv_mw mw;
	struct ibv_srq srq;
	struct ibv_wq wq;
	struct ibv_rwq_ind_table ind_table;
	struct ibv_dm dm;
	struct ibv_td td;
	struct ibv_xrcd xrcd;
	struct ibv_counters counters;
	struct ibv_flow flow;
	struct ibv_flow_action action;
	struct ibv_comp_channel channel;
} fake;

static unsigned int hits[OP_COUNT], total_hits;

/* Arguments some sentinels keep for the tests that look at them. */
static struct {
	struct ibv_context *context;
	struct verbs_mr *vmr;
	int access;
	uint8_t port_num;
} last;

static struct test_device tdev;
static struct test_context *tctx;	/* freed by s_free_context */
static struct ibv_context *ctx;
static bool free_context_done;

static int cmd_pipe[2] = { -1, -1 };	/* [1] becomes libibverbs' cmd_fd */
static int async_pipe[2] = { -1, -1 };	/* [0] becomes its async_fd */
static int chan_pipe[2] = { -1, -1 };	/* [0] is the fake channel's fd */

static int hit(enum op op)
{
	hits[op]++;
	total_hits++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The sentinels                                                      */
/* ------------------------------------------------------------------ */

static int s_advise_mr(UNUSED struct ibv_pd *pd, UNUSED enum ibv_advise_mr_advice advice,
		       UNUSED uint32_t flags, UNUSED struct ibv_sge *sg_list,
		       UNUSED uint32_t num_sges)
{ return hit(OP_advise_mr); }
static struct ibv_dm *s_alloc_dm(UNUSED struct ibv_context *c, UNUSED struct ibv_alloc_dm_attr *a)
{ hit(OP_alloc_dm); return &fake.dm; }
static struct ibv_mw *s_alloc_mw(UNUSED struct ibv_pd *pd, UNUSED enum ibv_mw_type type)
{ hit(OP_alloc_mw); return &fake.mw; }
static struct ibv_mr *s_alloc_null_mr(UNUSED struct ibv_pd *pd)
{ hit(OP_alloc_null_mr); return &fake.vmr.ibv_mr; }
static struct ibv_pd *s_alloc_parent_domain(UNUSED struct ibv_context *c,
					    UNUSED struct ibv_parent_domain_init_attr *a)
{ hit(OP_alloc_parent_domain); return &fake.pd; }
static struct ibv_pd *s_alloc_pd(struct ibv_context *c)
{ last.context = c; hit(OP_alloc_pd); return &fake.pd; }
static struct ibv_td *s_alloc_td(UNUSED struct ibv_context *c, UNUSED struct ibv_td_init_attr *a)
{ hit(OP_alloc_td); return &fake.td; }
static void s_async_event(UNUSED struct ibv_context *c, UNUSED struct ibv_async_event *e)
{ hit(OP_async_event); }
static int s_attach_counters_point_flow(UNUSED struct ibv_counters *c,
					UNUSED struct ibv_counter_attach_attr *a,
					UNUSED struct ibv_flow *f)
{ return hit(OP_attach_counters_point_flow); }
static int s_attach_mcast(UNUSED struct ibv_qp *qp,
			  UNUSED const union ibv_gid *gid, UNUSED uint16_t lid)
{ return hit(OP_attach_mcast); }
static int s_bind_mw(UNUSED struct ibv_qp *qp,
		     UNUSED struct ibv_mw *mw, UNUSED struct ibv_mw_bind *b)
{ return hit(OP_bind_mw); }
static int s_close_xrcd(UNUSED struct ibv_xrcd *x)
{ return hit(OP_close_xrcd); }
static void s_cq_event(UNUSED struct ibv_cq *cq)
{ hit(OP_cq_event); }
static struct ibv_ah *s_create_ah(UNUSED struct ibv_pd *pd, UNUSED struct ibv_ah_attr *a)
{ hit(OP_create_ah); return &fake.ah; }
static struct ibv_counters *s_create_counters(UNUSED struct ibv_context *c,
					      UNUSED struct ibv_counters_init_attr *a)
{ hit(OP_create_counters); return &fake.counters; }
static struct ibv_cq *s_create_cq(UNUSED struct ibv_context *c, UNUSED int cqe,
				  UNUSED struct ibv_comp_channel *ch, UNUSED int vec)
{ hit(OP_create_cq); return &fake.vcq.cq; }
static struct ibv_cq_ex *s_create_cq_ex(UNUSED struct ibv_context *c,
					UNUSED struct ibv_cq_init_attr_ex *a)
{ hit(OP_create_cq_ex); return &fake.vcq.cq_ex; }
static struct ibv_flow *s_create_flow(UNUSED struct ibv_qp *qp, UNUSED struct ibv_flow_attr *a)
{ hit(OP_create_flow); return &fake.flow; }
static struct ibv_flow_action *s_create_flow_action_esp(UNUSED struct ibv_context *c,
							UNUSED struct ibv_flow_action_esp_attr *a)
{ hit(OP_create_flow_action_esp); return &fake.action; }
static struct ibv_qp *s_create_qp(UNUSED struct ibv_pd *pd, UNUSED struct ibv_qp_init_attr *a)
{ hit(OP_create_qp); return &fake.vqp.qp; }
static struct ibv_qp *s_create_qp_ex(UNUSED struct ibv_context *c,
				     UNUSED struct ibv_qp_init_attr_ex *a)
{ hit(OP_create_qp_ex); return &fake.vqp.qp; }
static struct ibv_rwq_ind_table *s_create_rwq_ind_table(UNUSED struct ibv_context *c,
							UNUSED struct ibv_rwq_ind_table_init_attr *a)
{ hit(OP_create_rwq_ind_table); return &fake.ind_table; }
static struct ibv_srq *s_create_srq(UNUSED struct ibv_pd *pd, UNUSED struct ibv_srq_init_attr *a)
{ hit(OP_create_srq); return &fake.srq; }
static struct ibv_srq *s_create_srq_ex(UNUSED struct ibv_context *c,
				       UNUSED struct ibv_srq_init_attr_ex *a)
{ hit(OP_create_srq_ex); return &fake.srq; }
static struct ibv_wq *s_create_wq(UNUSED struct ibv_context *c, UNUSED struct ibv_wq_init_attr *a)
{ hit(OP_create_wq); return &fake.wq; }
static int s_dealloc_mw(UNUSED struct ibv_mw *mw)
{ return hit(OP_dealloc_mw); }
static int s_dealloc_pd(UNUSED struct ibv_pd *pd)
{ return hit(OP_dealloc_pd); }
static int s_dealloc_td(UNUSED struct ibv_td *td)
{ return hit(OP_dealloc_td); }
static int s_dereg_mr(struct verbs_mr *vmr)
{ last.vmr = vmr; return hit(OP_dereg_mr); }
static int s_destroy_ah(UNUSED struct ibv_ah *ah)
{ return hit(OP_destroy_ah); }
static int s_destroy_counters(UNUSED struct ibv_counters *c)
{ return hit(OP_destroy_counters); }
static int s_destroy_cq(UNUSED struct ibv_cq *cq)
{ return hit(OP_destroy_cq); }
static int s_destroy_flow(UNUSED struct ibv_flow *f)
{ return hit(OP_destroy_flow); }
static int s_destroy_flow_action(UNUSED struct ibv_flow_action *a)
{ return hit(OP_destroy_flow_action); }
static int s_destroy_qp(UNUSED struct ibv_qp *qp)
{ return hit(OP_destroy_qp); }
static int s_destroy_rwq_ind_table(UNUSED struct ibv_rwq_ind_table *t)
{ return hit(OP_destroy_rwq_ind_table); }
static int s_destroy_srq(UNUSED struct ibv_srq *srq)
{ return hit(OP_destroy_srq); }
static int s_destroy_wq(UNUSED struct ibv_wq *wq)
{ return hit(OP_destroy_wq); }
static int s_detach_mcast(UNUSED struct ibv_qp *qp,
			  UNUSED const union ibv_gid *gid, UNUSED uint16_t lid)
{ return hit(OP_detach_mcast); }

/* The one real op: what a provider's free_context does. */
static void s_free_context(struct ibv_context *c)
{
	struct test_context *t = VERBS_PRIV_CONTAINER(c, struct test_context,
						      ibv_ctx.context);

	hit(OP_free_context);
	verbs_uninit_context(&t->ibv_ctx);
	free(t);
	free_context_done = true;
}

static int s_free_dm(UNUSED struct ibv_dm *dm)
{ return hit(OP_free_dm); }
static int s_get_srq_num(UNUSED struct ibv_srq *srq, uint32_t *num)
{ *num = 7; return hit(OP_get_srq_num); }
static struct ibv_dm *s_import_dm(UNUSED struct ibv_context *c, UNUSED uint32_t h)
{ hit(OP_import_dm); return &fake.dm; }
static struct ibv_mr *s_import_mr(UNUSED struct ibv_pd *pd, UNUSED uint32_t h)
{ hit(OP_import_mr); return &fake.vmr.ibv_mr; }
static struct ibv_pd *s_import_pd(UNUSED struct ibv_context *c, UNUSED uint32_t h)
{ hit(OP_import_pd); return &fake.pd; }
static int s_modify_cq(UNUSED struct ibv_cq *cq, UNUSED struct ibv_modify_cq_attr *a)
{ return hit(OP_modify_cq); }
static int s_modify_flow_action_esp(UNUSED struct ibv_flow_action *f,
				    UNUSED struct ibv_flow_action_esp_attr *a)
{ return hit(OP_modify_flow_action_esp); }
static int s_modify_qp(UNUSED struct ibv_qp *qp, UNUSED struct ibv_qp_attr *a, UNUSED int mask)
{ return hit(OP_modify_qp); }
static int s_modify_qp_rate_limit(UNUSED struct ibv_qp *qp, UNUSED struct ibv_qp_rate_limit_attr *a)
{ return hit(OP_modify_qp_rate_limit); }
static int s_modify_srq(UNUSED struct ibv_srq *srq, UNUSED struct ibv_srq_attr *a, UNUSED int mask)
{ return hit(OP_modify_srq); }
static int s_modify_wq(UNUSED struct ibv_wq *wq, UNUSED struct ibv_wq_attr *a)
{ return hit(OP_modify_wq); }
static struct ibv_qp *s_open_qp(UNUSED struct ibv_context *c, UNUSED struct ibv_qp_open_attr *a)
{ hit(OP_open_qp); return &fake.vqp.qp; }
static struct ibv_xrcd *s_open_xrcd(UNUSED struct ibv_context *c,
				    UNUSED struct ibv_xrcd_init_attr *a)
{ hit(OP_open_xrcd); return &fake.xrcd; }
static int s_poll_cq(UNUSED struct ibv_cq *cq, UNUSED int n, UNUSED struct ibv_wc *wc)
{ return hit(OP_poll_cq); }
static int s_post_recv(UNUSED struct ibv_qp *qp, UNUSED struct ibv_recv_wr *wr,
		       UNUSED struct ibv_recv_wr **bad)
{ return hit(OP_post_recv); }
static int s_post_send(UNUSED struct ibv_qp *qp, UNUSED struct ibv_send_wr *wr,
		       UNUSED struct ibv_send_wr **bad)
{ return hit(OP_post_send); }
static int s_post_srq_ops(UNUSED struct ibv_srq *srq, UNUSED struct ibv_ops_wr *op,
			  UNUSED struct ibv_ops_wr **bad)
{ return hit(OP_post_srq_ops); }
static int s_post_srq_recv(UNUSED struct ibv_srq *srq, UNUSED struct ibv_recv_wr *wr,
			   UNUSED struct ibv_recv_wr **bad)
{ return hit(OP_post_srq_recv); }
static int s_query_device_ex(UNUSED struct ibv_context *c,
			     UNUSED const struct ibv_query_device_ex_input *in,
			     UNUSED struct ibv_device_attr_ex *attr, UNUSED size_t size)
{ return hit(OP_query_device_ex); }
static int s_query_ece(UNUSED struct ibv_qp *qp, UNUSED struct ibv_ece *ece)
{ return hit(OP_query_ece); }
static int s_query_port(UNUSED struct ibv_context *c, uint8_t port, UNUSED struct ibv_port_attr *a)
{ last.port_num = port; return hit(OP_query_port); }
static int s_query_qp(UNUSED struct ibv_qp *qp, UNUSED struct ibv_qp_attr *a, UNUSED int mask,
		      UNUSED struct ibv_qp_init_attr *init)
{ return hit(OP_query_qp); }
static int s_query_qp_data_in_order(UNUSED struct ibv_qp *qp, UNUSED enum ibv_wr_opcode op,
				    UNUSED uint32_t flags)
{ return hit(OP_query_qp_data_in_order); }
static int s_query_rt_values(UNUSED struct ibv_context *c, UNUSED struct ibv_values_ex *v)
{ return hit(OP_query_rt_values); }
static int s_query_srq(UNUSED struct ibv_srq *srq, UNUSED struct ibv_srq_attr *a)
{ return hit(OP_query_srq); }
static int s_read_counters(UNUSED struct ibv_counters *c, UNUSED uint64_t *v, UNUSED uint32_t n,
			   UNUSED uint32_t flags)
{ return hit(OP_read_counters); }
static struct ibv_mr *s_reg_dm_mr(UNUSED struct ibv_pd *pd, UNUSED struct ibv_dm *dm,
				  UNUSED uint64_t off, UNUSED size_t len, UNUSED unsigned int access)
{ hit(OP_reg_dm_mr); return &fake.vmr.ibv_mr; }
static struct ibv_mr *s_reg_dmabuf_mr(UNUSED struct ibv_pd *pd, UNUSED uint64_t off,
				      UNUSED size_t len, UNUSED uint64_t iova, UNUSED int fd,
				      UNUSED int access)
{ hit(OP_reg_dmabuf_mr); return &fake.vmr.ibv_mr; }
static struct ibv_mr *s_reg_mr(UNUSED struct ibv_pd *pd, UNUSED void *addr, UNUSED size_t len,
			       UNUSED uint64_t hca_va, int access)
{ last.access = access; hit(OP_reg_mr); return &fake.vmr.ibv_mr; }
static int s_req_notify_cq(UNUSED struct ibv_cq *cq, UNUSED int solicited_only)
{ return hit(OP_req_notify_cq); }
static int s_rereg_mr(UNUSED struct verbs_mr *vmr, UNUSED int flags, UNUSED struct ibv_pd *pd,
		      UNUSED void *addr, UNUSED size_t len, UNUSED int access)
{ return hit(OP_rereg_mr); }
static int s_resize_cq(UNUSED struct ibv_cq *cq, UNUSED int cqe)
{ return hit(OP_resize_cq); }
static int s_set_ece(UNUSED struct ibv_qp *qp, UNUSED struct ibv_ece *ece)
{ return hit(OP_set_ece); }
static void s_unimport_dm(UNUSED struct ibv_dm *dm)
{ hit(OP_unimport_dm); }
static void s_unimport_mr(UNUSED struct ibv_mr *mr)
{ hit(OP_unimport_mr); }
static void s_unimport_pd(UNUSED struct ibv_pd *pd)
{ hit(OP_unimport_pd); }

static const struct verbs_context_ops sentinel_ops = {
#define X(name) .name = s_##name,
	VERBS_OPS(X)
#undef X
};

/* ------------------------------------------------------------------ */
/* The fake device and its alloc_context                              */
/* ------------------------------------------------------------------ */

/* What alloc_context saw and did, checked after verbs_open_device(). */
static struct {
	bool called;
	int cmd_fd;
	void *private_data;
	struct ibv_device *device;
	int get_context_ret;
	ssize_t cmd_len;
	uint8_t cmd[256];
	uintptr_t resp_addr;
} actx;

static ssize_t drain(uint8_t *buf, size_t size);

static struct verbs_context *test_alloc_context(struct ibv_device *ibdev,
						int cmd_fd, void *private_data)
{
	struct ibv_get_context cmd;
	struct usrx_get_context_resp resp;

	actx.called = true;
	actx.cmd_fd = cmd_fd;
	actx.private_data = private_data;
	actx.device = ibdev;

	/* cmd_fd is -1 (the fake device has no sysfs): use the pipe instead. */
	tctx = verbs_init_and_alloc_context(ibdev, cmd_pipe[1], tctx, ibv_ctx,
					    SRX_DRIVER_ID);
	if (!tctx)
		return NULL;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	/* What srx.ko would answer; libibverbs copies the core part. */
	resp.ibv_resp.async_fd = (uint32_t)async_pipe[0];
	resp.ibv_resp.num_comp_vectors = 3;
	resp.drv.ring_format = SRX_RING_FORMAT;
	actx.resp_addr = (uintptr_t)&resp;
	actx.get_context_ret = ibv_cmd_get_context(&tctx->ibv_ctx, &cmd,
						   sizeof(cmd), &resp.ibv_resp,
						   sizeof(resp));
	actx.cmd_len = drain(actx.cmd, sizeof(actx.cmd));

	verbs_set_ops(&tctx->ibv_ctx, &sentinel_ops);
	return &tctx->ibv_ctx;
}

static struct verbs_device *test_alloc_device(UNUSED struct verbs_sysfs_dev *sysfs)
{
	return NULL;	/* never called: no device is matched in this test */
}

static void test_uninit_device(UNUSED struct verbs_device *dev)
{
}

static const struct verbs_match_ent test_match_table[] = {
	VERBS_PRIV_MATCH_DRIVER_ID(SRX_DRIVER_ID),
	VERBS_PRIV_MATCH_END,
};

static const struct verbs_device_ops test_dev_ops = {
	.name = "srx_layout_test",
	.match_min_abi_version = SRX_UVERBS_ABI_VERSION,
	.match_max_abi_version = SRX_UVERBS_ABI_VERSION,
	.match_table = test_match_table,
	.alloc_context = test_alloc_context,
	.alloc_device = test_alloc_device,
	.uninit_device = test_uninit_device,
};

/*
 * Registers with libibverbs at start-up, as libsrx will. Harmless here:
 * only ibv_get_device_list() looks at registered drivers, and this test
 * never calls it.
 */
static bool registered;
static void __attribute__((constructor)) note_registered(void)
{
	registered = true;
}
VERBS_PRIV_PROVIDER_REGISTER(test_dev_ops)

/* ------------------------------------------------------------------ */
/* Pipes and captured commands                                        */
/* ------------------------------------------------------------------ */

/* Read what libibverbs wrote to its cmd_fd since the last call. */
static ssize_t drain(uint8_t *buf, size_t size)
{
	ssize_t len = 0, n;

	for (;;) {
		n = read(cmd_pipe[0], buf + len, size - (size_t)len);
		if (n <= 0)
			break;
		len += n;
		if ((size_t)len == size)
			break;
	}
	return len;
}

static uint8_t cap[512];
static ssize_t cap_len;

static void capture(void)
{
	cap_len = drain(cap, sizeof(cap));
}

static struct ib_uverbs_cmd_hdr cap_hdr(void)
{
	struct ib_uverbs_cmd_hdr h;

	memcpy(&h, cap, sizeof(h));
	return h;
}

static struct ex_hdr cap_ex_hdr(void)
{
	struct ex_hdr h;

	memcpy(&h, cap, sizeof(h));
	return h;
}

/* The captured command seen through wrapper type T. */
#define CAP_AS(T) ({ T _v; memcpy(&_v, cap, sizeof(_v)); _v; })

/* Does the kernel's response window [resp, resp + words*unit) end at end? */
static bool resp_ends_at(uint64_t resp, unsigned int words, unsigned int unit,
			 const void *end)
{
	return resp + (uint64_t)words * unit == (uintptr_t)end;
}

/* ------------------------------------------------------------------ */
/* 1. Static layout                                                   */
/* ------------------------------------------------------------------ */

#define LEGACY_CMD(T, K)                                                       \
	tap(offsetof(struct T, core_payload) == sizeof(struct ib_uverbs_cmd_hdr) && \
	    sizeof(struct T) == sizeof(struct ib_uverbs_cmd_hdr) + sizeof(struct K), \
	    "layout: struct " #T " is the 8-byte write() header + struct " #K)
#define EX_CMD(T, K)                                                           \
	tap(offsetof(struct T, core_payload) == sizeof(struct ex_hdr) &&      \
	    sizeof(struct ex_hdr) == 24 &&                                     \
	    sizeof(struct T) == sizeof(struct ex_hdr) + sizeof(struct K),      \
	    "layout: struct " #T " is the 24-byte ex_hdr + struct " #K)
/* Member m of struct T has exactly type type. */
#define MEMBER_IS(T, m, type)                                                  \
	__builtin_types_compatible_p(__typeof__(((T *)0)->m), type)
#define ALIGN_UP(n, a) (((n) + (a) - 1) / (a) * (a))
#define DRV(T, member, CORE, D, unit)                                          \
	tap(offsetof(struct T, member) == 0 &&                                 \
	    offsetof(struct T, drv) == sizeof(struct CORE) &&                  \
	    sizeof(struct T) == sizeof(struct CORE) + sizeof(struct D) &&      \
	    sizeof(struct D) % (unit) == 0,                                    \
	    "layout: struct " #T " = struct " #CORE " + struct " #D)

static void test_static_layout(void)
{
	void (*slots[OP_COUNT])(void);
	bool ok = true;

	tap(sizeof(struct verbs_context_ops) == 76 * sizeof(void (*)(void)),
	    "layout: verbs_context_ops is 76 function pointers");

	/* Each sentinel is set, and no two are the same function. */
	memcpy(slots, &sentinel_ops, sizeof(slots));
	for (unsigned int i = 0; i < OP_COUNT; i++) {
		CHECK(slots[i] != NULL);
		for (unsigned int j = 0; j < i; j++)
			CHECK(slots[i] != slots[j]);
	}
	tap(ok, "layout: the sentinel table fills all 76 slots with distinct functions");

	LEGACY_CMD(ibv_get_context, ib_uverbs_get_context);
	LEGACY_CMD(ibv_query_port, ib_uverbs_query_port);
	LEGACY_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
	LEGACY_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
	LEGACY_CMD(ibv_create_cq, ib_uverbs_create_cq);
	LEGACY_CMD(ibv_resize_cq, ib_uverbs_resize_cq);
	LEGACY_CMD(ibv_create_qp, ib_uverbs_create_qp);
	LEGACY_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
	LEGACY_CMD(ibv_query_qp, ib_uverbs_query_qp);
	LEGACY_CMD(ibv_create_srq, ib_uverbs_create_srq);
	LEGACY_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
	LEGACY_CMD(ibv_query_srq, ib_uverbs_query_srq);
	EX_CMD(ibv_create_cq_ex, ib_uverbs_ex_create_cq);
	EX_CMD(ibv_create_qp_ex, ib_uverbs_ex_create_qp);

	DRV(usrx_get_context_resp, ibv_resp, ib_uverbs_get_context_resp, srx_alloc_ucontext_resp, 4);
	DRV(usrx_create_cq, ibv_cmd, ibv_create_cq, srx_create_cq_cmd, 4);
	DRV(usrx_create_cq_resp, ibv_resp, ib_uverbs_create_cq_resp, srx_create_cq_resp, 4);
	DRV(usrx_create_cq_ex, ibv_cmd, ibv_create_cq_ex, srx_create_cq_cmd, 8);
	DRV(usrx_create_cq_ex_resp, ibv_resp, ib_uverbs_ex_create_cq_resp, srx_create_cq_resp, 8);
	DRV(usrx_resize_cq, ibv_cmd, ibv_resize_cq, srx_resize_cq_cmd, 4);
	DRV(usrx_resize_cq_resp, ibv_resp, ib_uverbs_resize_cq_resp, srx_resize_cq_resp, 4);
	DRV(usrx_create_qp_resp, ibv_resp, ib_uverbs_create_qp_resp, srx_create_qp_resp, 4);
	DRV(usrx_create_qp_ex_resp, ibv_resp, ib_uverbs_ex_create_qp_resp, srx_create_qp_resp, 8);
	DRV(usrx_create_srq_resp, ibv_resp, ib_uverbs_create_srq_resp, srx_create_srq_resp, 4);
	DRV(usrx_create_ah_resp, ibv_resp, ib_uverbs_create_ah_resp, srx_create_ah_resp, 4);

	/*
	 * Room to grow (srx-abi.h, ABI 2): every layout and the context
	 * response end in a comp_mask, layouts with reserved words after it,
	 * and sizes stay multiples of 8 (the ex commands count 8-byte words).
	 */
	ok = true;
	CHECK(SRX_UVERBS_ABI_VERSION == 2);
	CHECK(sizeof(struct srx_cq_layout) == 64);
	CHECK(offsetof(struct srx_cq_layout, comp_mask) == 52);
	CHECK(sizeof(struct srx_wq_layout) == 64);
	CHECK(offsetof(struct srx_wq_layout, comp_mask) == 48);
	CHECK(offsetof(struct srx_create_qp_resp, rq) == 64);
	CHECK(sizeof(struct srx_alloc_ucontext_resp) == 16);
	CHECK(offsetof(struct srx_alloc_ucontext_resp, comp_mask) == 12);
	CHECK(sizeof(struct srx_create_ah_resp) == 8);
	CHECK(offsetof(struct srx_create_srq_resp, comp_mask) == 64);
	CHECK(sizeof(struct srx_create_srq_resp) == 80);
	CHECK(sizeof(struct srx_create_cq_resp) % 8 == 0 &&
	      sizeof(struct srx_resize_cq_resp) % 8 == 0 &&
	      sizeof(struct srx_create_qp_resp) % 8 == 0 &&
	      sizeof(struct srx_create_srq_resp) % 8 == 0 &&
	      sizeof(struct srx_alloc_ucontext_resp) % 8 == 0);
	tap(ok, "layout: ABI 2 layouts and responses have a comp_mask and room to grow");

	ok = true;
	CHECK(offsetof(struct verbs_qp, qp) == 0);
	CHECK(offsetof(struct verbs_qp, qp_ex.qp_base) == 0);
	CHECK(offsetof(struct verbs_cq, cq) == 0);
	CHECK(offsetof(struct verbs_cq, cq_ex) == 0);
	CHECK(ibv_cq_ex_to_cq(&fake.vcq.cq_ex) == &fake.vcq.cq);
	CHECK(offsetof(struct verbs_mr, ibv_mr) == 0);
	CHECK(offsetof(struct verbs_device, device) == 0);
	tap(ok, "layout: verbs_qp, verbs_cq, verbs_mr, verbs_device start with the public object");

	/*
	 * rdma-core v44.0 libibverbs/driver.h, struct verbs_srq: the public
	 * struct ibv_srq, then enum ibv_srq_type srq_type, struct verbs_xrcd
	 * *xrcd, struct ibv_cq *cq, uint32_t srq_num, in that order and with
	 * nothing between them. The offsets below follow from that list and
	 * the C layout rules, not from our declaration; test_cmd_srq_tail()
	 * has libibverbs itself write the four tail members.
	 */
	ok = true;
	CHECK(offsetof(struct verbs_srq, srq) == 0);
	CHECK(MEMBER_IS(struct verbs_srq, srq, struct ibv_srq));
	CHECK(MEMBER_IS(struct verbs_srq, srq_type, enum ibv_srq_type));
	CHECK(MEMBER_IS(struct verbs_srq, xrcd, struct verbs_xrcd *));
	CHECK(MEMBER_IS(struct verbs_srq, cq, struct ibv_cq *));
	CHECK(MEMBER_IS(struct verbs_srq, srq_num, uint32_t));
	CHECK(offsetof(struct verbs_srq, srq_type) ==
	      ALIGN_UP(sizeof(struct ibv_srq), _Alignof(enum ibv_srq_type)));
	CHECK(offsetof(struct verbs_srq, xrcd) ==
	      ALIGN_UP(offsetof(struct verbs_srq, srq_type) +
		       sizeof(enum ibv_srq_type), _Alignof(struct verbs_xrcd *)));
	CHECK(offsetof(struct verbs_srq, cq) ==
	      offsetof(struct verbs_srq, xrcd) + sizeof(struct verbs_xrcd *));
	CHECK(offsetof(struct verbs_srq, srq_num) ==
	      offsetof(struct verbs_srq, cq) + sizeof(struct ibv_cq *));
	CHECK(sizeof(struct verbs_srq) ==
	      ALIGN_UP(offsetof(struct verbs_srq, srq_num) + sizeof(uint32_t),
		       _Alignof(struct verbs_srq)));
	CHECK(_Alignof(struct verbs_srq) == _Alignof(struct ibv_srq));
	tap(ok, "layout: verbs_srq is struct ibv_srq, then srq_type, xrcd, cq, srq_num "
	    "as in rdma-core v44.0 driver.h");
}

/* ------------------------------------------------------------------ */
/* 2. Exported symbols                                                */
/* ------------------------------------------------------------------ */

static void test_symbols(void)
{
	static const char *const names[] = {
		"__verbs_log", "verbs_register_driver_34",
		"_verbs_init_and_alloc_context", "verbs_uninit_context",
		"verbs_set_ops", "verbs_init_cq", "verbs_open_device",
		"ibv_read_ibdev_sysfs_file", "ibv_cmd_get_context",
		"ibv_cmd_query_device_any", "ibv_cmd_query_port",
		"ibv_cmd_alloc_pd", "ibv_cmd_dealloc_pd", "ibv_cmd_reg_mr",
		"ibv_cmd_dereg_mr", "ibv_cmd_create_cq", "ibv_cmd_create_cq_ex",
		"ibv_cmd_destroy_cq", "ibv_cmd_resize_cq", "ibv_cmd_poll_cq",
		"ibv_cmd_req_notify_cq", "ibv_cmd_create_qp",
		"ibv_cmd_create_qp_ex", "ibv_cmd_create_qp_ex2",
		"ibv_cmd_modify_qp", "ibv_cmd_query_qp", "ibv_cmd_destroy_qp",
		"ibv_cmd_post_send", "ibv_cmd_post_recv", "ibv_cmd_create_ah",
		"ibv_cmd_destroy_ah", "ibv_query_gid_type",
		"ibv_cmd_create_srq", "ibv_cmd_destroy_srq",
		"ibv_cmd_modify_srq", "ibv_cmd_query_srq",
	};
	/* Referencing them also makes the link fail if one is missing. */
	const void *linked[] = {
		(const void *)__verbs_log, (const void *)verbs_register_driver_34,
		(const void *)_verbs_init_and_alloc_context,
		(const void *)verbs_uninit_context, (const void *)verbs_set_ops,
		(const void *)verbs_init_cq, (const void *)verbs_open_device,
		(const void *)ibv_read_ibdev_sysfs_file,
		(const void *)ibv_cmd_get_context,
		(const void *)ibv_cmd_query_device_any,
		(const void *)ibv_cmd_query_port, (const void *)ibv_cmd_alloc_pd,
		(const void *)ibv_cmd_dealloc_pd, (const void *)ibv_cmd_reg_mr,
		(const void *)ibv_cmd_dereg_mr, (const void *)ibv_cmd_create_cq,
		(const void *)ibv_cmd_create_cq_ex,
		(const void *)ibv_cmd_destroy_cq, (const void *)ibv_cmd_resize_cq,
		(const void *)ibv_cmd_poll_cq, (const void *)ibv_cmd_req_notify_cq,
		(const void *)ibv_cmd_create_qp, (const void *)ibv_cmd_create_qp_ex,
		(const void *)ibv_cmd_create_qp_ex2, (const void *)ibv_cmd_modify_qp,
		(const void *)ibv_cmd_query_qp, (const void *)ibv_cmd_destroy_qp,
		(const void *)ibv_cmd_post_send, (const void *)ibv_cmd_post_recv,
		(const void *)ibv_cmd_create_ah, (const void *)ibv_cmd_destroy_ah,
		(const void *)ibv_query_gid_type,
		(const void *)ibv_cmd_create_srq, (const void *)ibv_cmd_destroy_srq,
		(const void *)ibv_cmd_modify_srq, (const void *)ibv_cmd_query_srq,
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) ==
		       sizeof(linked) / sizeof(linked[0]), "one name per symbol");
	void *lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);

	tap(lib != NULL, "symbols: libibverbs.so.1 is loaded");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *sym = lib ? dlvsym(lib, names[i], VERBS_PRIV_ABI_NAME) : NULL;
		Dl_info info = { 0 };

		/* The address we linked to lives in the same library. */
		tap(sym != NULL && linked[i] != NULL &&
		    dladdr(linked[i], &info) && info.dli_fname &&
		    strstr(info.dli_fname, "libibverbs.so") != NULL,
		    "symbols: %s@%s", names[i], VERBS_PRIV_ABI_NAME);
	}
	if (lib)
		dlclose(lib);
}

/* ------------------------------------------------------------------ */
/* 3. Opening the context                                             */
/* ------------------------------------------------------------------ */

static void setup_fakes(void)
{
	struct ibv_pd *pd = &fake.pd;

	memset(&fake, 0, sizeof(fake));
	fake.pd.context = ctx;
	fake.pd.handle = 0x11;
	fake.vmr.ibv_mr.context = ctx;
	fake.vmr.ibv_mr.pd = pd;
	fake.vmr.mr_type = IBV_MR_TYPE_MR;
	verbs_init_cq(&fake.vcq.cq, ctx, NULL, NULL);
	fake.vcq.cq.handle = 0x22;
	fake.vqp.qp.context = ctx;
	fake.vqp.qp.pd = pd;
	fake.vqp.qp.handle = 0x33;
	fake.ah.context = ctx;
	fake.ah.pd = pd;
	fake.ah.handle = 0x44;
	fake.mw.context = ctx;
	fake.mw.pd = pd;
	fake.mw.type = IBV_MW_TYPE_1;
	fake.srq.context = ctx;
	fake.wq.context = ctx;
	fake.ind_table.context = ctx;
	fake.dm.context = ctx;
	fake.td.context = ctx;
	fake.xrcd.context = ctx;
	fake.counters.context = ctx;
	fake.flow.context = ctx;
	fake.action.context = ctx;
	fake.channel.context = ctx;
	fake.channel.fd = chan_pipe[0];
}

static void test_open(void)
{
	struct verbs_context *vctx;
	struct ib_uverbs_cmd_hdr h;
	struct ibv_get_context c;
	bool ok = true;
	int private_marker;

	memset(&tdev, 0, sizeof(tdev));
	tdev.vdev.ops = &test_dev_ops;
	atomic_init(&tdev.vdev.refcount, 1);
	tdev.vdev.sysfs = NULL;	/* no uverbs file to open */
	tdev.vdev.device.node_type = IBV_NODE_CA;
	tdev.vdev.device.transport_type = IBV_TRANSPORT_IB;
	strcpy(tdev.vdev.device.name, "srxtest0");
	strcpy(tdev.vdev.device.dev_name, "uverbs99");
	tdev.marker = 0x5358;

	tap(registered, "register: VERBS_PRIV_PROVIDER_REGISTER's constructor ran");

	ctx = verbs_open_device(&tdev.vdev.device, &private_marker);
	tap(ctx != NULL && actx.called && actx.cmd_fd == -1 &&
	    actx.private_data == &private_marker &&
	    actx.device == &tdev.vdev.device,
	    "open: verbs_open_device() calls verbs_device_ops.alloc_context");
	if (!ctx) {
		printf("Bail out! no context, errno %d\n", errno);
		exit(1);
	}

	vctx = verbs_get_ctx(ctx);
	CHECK(vctx == &tctx->ibv_ctx);
	CHECK(ctx == &tctx->ibv_ctx.context);
	CHECK(vctx->sz == sizeof(struct verbs_context));
	CHECK(ctx->device == &tdev.vdev.device);
	CHECK(ctx->cmd_fd == cmd_pipe[1]);
	for (unsigned int i = 0; i < 5; i++)
		CHECK(tctx->before[i] == 0);
	CHECK(tctx->after == 0);
	CHECK(verbs_get_device(ctx->device) == &tdev.vdev);
	tap(ok, "open: verbs_init_and_alloc_context() puts verbs_context at its member offset");

	tap(atomic_load(&tdev.vdev.refcount) == 2,
	    "open: the context holds a reference in verbs_device.refcount (%d)",
	    atomic_load(&tdev.vdev.refcount));

	ok = true;
	CHECK(actx.get_context_ret == 0);
	CHECK(actx.cmd_len == (ssize_t)sizeof(struct ibv_get_context));
	memcpy(&h, actx.cmd, sizeof(h));
	memcpy(&c, actx.cmd, sizeof(c));
	CHECK(h.command == IB_USER_VERBS_CMD_GET_CONTEXT);
	CHECK(h.in_words * 4u == sizeof(struct ibv_get_context));
	CHECK(h.out_words * 4u == sizeof(struct usrx_get_context_resp));
	CHECK(c.core_payload.response == actx.resp_addr);
	tap(ok, "cmd: ibv_cmd_get_context() writes GET_CONTEXT with srx's response room");

	ok = true;
	CHECK(ctx->async_fd == async_pipe[0]);
	CHECK(ctx->num_comp_vectors == 3);
	tap(ok, "cmd: ibv_cmd_get_context() takes async_fd, num_comp_vectors from the core response");

	setup_fakes();
}

/* ------------------------------------------------------------------ */
/* 4. Every op through its public entry point                         */
/* ------------------------------------------------------------------ */

/*
 * Call the public entry point that reaches op; *via names it. Returns
 * whether the entry point gave back what the sentinel returned.
 */
static bool call_public(enum op op, const char **via)
{
	struct ibv_qp *qp = &fake.vqp.qp;
	struct ibv_cq *cq = &fake.vcq.cq;
	struct ibv_pd *pd = &fake.pd;
	struct ibv_srq *srq = &fake.srq;
	static uint8_t buf[4096];

	switch (op) {
	case OP_advise_mr: {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64 };

		*via = "ibv_advise_mr";
		return ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == 0;
	}
	case OP_alloc_dm: {
		struct ibv_alloc_dm_attr a = { .length = 64 };

		*via = "ibv_alloc_dm";
		return ibv_alloc_dm(ctx, &a) == &fake.dm;
	}
	case OP_alloc_mw:
		*via = "ibv_alloc_mw";
		return ibv_alloc_mw(pd, IBV_MW_TYPE_1) == &fake.mw;
	case OP_alloc_null_mr:
		*via = "ibv_alloc_null_mr";
		return ibv_alloc_null_mr(pd) == &fake.vmr.ibv_mr;
	case OP_alloc_parent_domain: {
		struct ibv_parent_domain_init_attr a = { .pd = pd };

		*via = "ibv_alloc_parent_domain";
		return ibv_alloc_parent_domain(ctx, &a) == &fake.pd;
	}
	case OP_alloc_pd:
		*via = "ibv_alloc_pd";
		return ibv_alloc_pd(ctx) == &fake.pd && last.context == ctx &&
		       fake.pd.context == ctx;
	case OP_alloc_td: {
		struct ibv_td_init_attr a = { 0 };

		*via = "ibv_alloc_td";
		return ibv_alloc_td(ctx, &a) == &fake.td;
	}
	case OP_async_event: {
		struct ib_uverbs_async_event_desc ev = {
			.element = 1, .event_type = IBV_EVENT_PORT_ACTIVE,
		};
		struct ibv_async_event e;

		*via = "ibv_get_async_event";
		if (write(async_pipe[1], &ev, sizeof(ev)) != sizeof(ev))
			return false;
		if (ibv_get_async_event(ctx, &e))
			return false;
		ibv_ack_async_event(&e);
		return e.event_type == IBV_EVENT_PORT_ACTIVE &&
		       e.element.port_num == 1;
	}
	case OP_attach_counters_point_flow: {
		struct ibv_counter_attach_attr a = { .counter_desc = IBV_COUNTER_PACKETS };

		*via = "ibv_attach_counters_point_flow";
		return ibv_attach_counters_point_flow(&fake.counters, &a, &fake.flow) == 0;
	}
	case OP_attach_mcast: {
		union ibv_gid gid = { .raw = { 0xff } };

		*via = "ibv_attach_mcast";
		return ibv_attach_mcast(qp, &gid, 0) == 0;
	}
	case OP_bind_mw: {
		struct ibv_mw_bind b = { .wr_id = 1 };

		*via = "ibv_bind_mw";
		return ibv_bind_mw(qp, &fake.mw, &b) == 0;
	}
	case OP_close_xrcd:
		*via = "ibv_close_xrcd";
		return ibv_close_xrcd(&fake.xrcd) == 0;
	case OP_cq_event: {
		struct ib_uverbs_comp_event_desc ev = { .cq_handle = (uintptr_t)cq };
		struct ibv_cq *got = NULL;
		void *cq_context = NULL;

		*via = "ibv_get_cq_event";
		if (write(chan_pipe[1], &ev, sizeof(ev)) != sizeof(ev))
			return false;
		if (ibv_get_cq_event(&fake.channel, &got, &cq_context))
			return false;
		ibv_ack_cq_events(got, 1);
		return got == cq;
	}
	case OP_create_ah: {
		struct ibv_ah_attr a = { .port_num = 1 };

		*via = "ibv_create_ah";
		return ibv_create_ah(pd, &a) == &fake.ah && fake.ah.pd == pd;
	}
	case OP_create_counters: {
		struct ibv_counters_init_attr a = { 0 };

		*via = "ibv_create_counters";
		return ibv_create_counters(ctx, &a) == &fake.counters;
	}
	case OP_create_cq:
		*via = "ibv_create_cq";
		return ibv_create_cq(ctx, 16, &fake, NULL, 0) == cq &&
		       cq->context == ctx && cq->cq_context == &fake;
	case OP_create_cq_ex: {
		struct ibv_cq_init_attr_ex a = { .cqe = 16, .cq_context = &fake };

		*via = "ibv_create_cq_ex";
		return ibv_create_cq_ex(ctx, &a) == &fake.vcq.cq_ex &&
		       cq->context == ctx && cq->cq_context == &fake;
	}
	case OP_create_flow: {
		struct ibv_flow_attr a = { .type = IBV_FLOW_ATTR_NORMAL, .port = 1 };

		*via = "ibv_create_flow";
		return ibv_create_flow(qp, &a) == &fake.flow;
	}
	case OP_create_flow_action_esp: {
		struct ibv_flow_action_esp_attr a = { 0 };

		*via = "ibv_create_flow_action_esp";
		return ibv_create_flow_action_esp(ctx, &a) == &fake.action;
	}
	case OP_create_qp: {
		struct ibv_qp_init_attr a = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		};

		*via = "ibv_create_qp";
		return ibv_create_qp(pd, &a) == qp;
	}
	case OP_create_qp_ex: {
		struct ibv_qp_init_attr_ex a = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND,
		};

		*via = "ibv_create_qp_ex";
		return ibv_create_qp_ex(ctx, &a) == qp;
	}
	case OP_create_rwq_ind_table: {
		struct ibv_wq *wqs[1] = { &fake.wq };
		struct ibv_rwq_ind_table_init_attr a = { .ind_tbl = wqs };

		*via = "ibv_create_rwq_ind_table";
		return ibv_create_rwq_ind_table(ctx, &a) == &fake.ind_table;
	}
	case OP_create_srq: {
		struct ibv_srq_init_attr a = { .srq_context = &fake, .attr = { .max_wr = 4, .max_sge = 1 } };

		*via = "ibv_create_srq";
		return ibv_create_srq(pd, &a) == srq && srq->srq_context == &fake &&
		       srq->context == ctx;
	}
	case OP_create_srq_ex: {
		struct ibv_srq_init_attr_ex a = {
			.attr = { .max_wr = 4, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
				     IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_BASIC, .pd = pd, .cq = cq,
		};

		*via = "ibv_create_srq_ex";
		return ibv_create_srq_ex(ctx, &a) == srq;
	}
	case OP_create_wq: {
		struct ibv_wq_init_attr a = {
			.wq_context = &fake, .wq_type = IBV_WQT_RQ, .max_wr = 4,
			.max_sge = 1, .pd = pd, .cq = cq,
		};

		*via = "ibv_create_wq";
		return ibv_create_wq(ctx, &a) == &fake.wq && fake.wq.wq_context == &fake;
	}
	case OP_dealloc_mw:
		*via = "ibv_dealloc_mw";
		return ibv_dealloc_mw(&fake.mw) == 0;
	case OP_dealloc_pd:
		*via = "ibv_dealloc_pd";
		return ibv_dealloc_pd(pd) == 0;
	case OP_dealloc_td:
		*via = "ibv_dealloc_td";
		return ibv_dealloc_td(&fake.td) == 0;
	case OP_dereg_mr:
		*via = "ibv_dereg_mr";
		return ibv_dereg_mr(&fake.vmr.ibv_mr) == 0 && last.vmr == &fake.vmr;
	case OP_destroy_ah:
		*via = "ibv_destroy_ah";
		return ibv_destroy_ah(&fake.ah) == 0;
	case OP_destroy_counters:
		*via = "ibv_destroy_counters";
		return ibv_destroy_counters(&fake.counters) == 0;
	case OP_destroy_cq:
		*via = "ibv_destroy_cq";
		return ibv_destroy_cq(cq) == 0;
	case OP_destroy_flow:
		*via = "ibv_destroy_flow";
		return ibv_destroy_flow(&fake.flow) == 0;
	case OP_destroy_flow_action:
		*via = "ibv_destroy_flow_action";
		return ibv_destroy_flow_action(&fake.action) == 0;
	case OP_destroy_qp:
		*via = "ibv_destroy_qp";
		return ibv_destroy_qp(qp) == 0;
	case OP_destroy_rwq_ind_table:
		*via = "ibv_destroy_rwq_ind_table";
		return ibv_destroy_rwq_ind_table(&fake.ind_table) == 0;
	case OP_destroy_srq:
		*via = "ibv_destroy_srq";
		return ibv_destroy_srq(srq) == 0;
	case OP_destroy_wq:
		*via = "ibv_destroy_wq";
		return ibv_destroy_wq(&fake.wq) == 0;
	case OP_detach_mcast: {
		union ibv_gid gid = { .raw = { 0xff } };

		*via = "ibv_detach_mcast";
		return ibv_detach_mcast(qp, &gid, 0) == 0;
	}
	case OP_free_context:
		*via = "ibv_close_device";
		return ibv_close_device(ctx) == 0 && free_context_done;
	case OP_free_dm:
		*via = "ibv_free_dm";
		return ibv_free_dm(&fake.dm) == 0;
	case OP_get_srq_num: {
		uint32_t num = 0;

		*via = "ibv_get_srq_num";
		return ibv_get_srq_num(srq, &num) == 0 && num == 7;
	}
	case OP_import_dm:
		*via = "ibv_import_dm";
		return ibv_import_dm(ctx, 1) == &fake.dm;
	case OP_import_mr:
		*via = "ibv_import_mr";
		return ibv_import_mr(pd, 1) == &fake.vmr.ibv_mr;
	case OP_import_pd:
		*via = "ibv_import_pd";
		return ibv_import_pd(ctx, 1) == &fake.pd;
	case OP_modify_cq: {
		struct ibv_modify_cq_attr a = { .attr_mask = IBV_CQ_ATTR_MODERATE };

		*via = "ibv_modify_cq";
		return ibv_modify_cq(cq, &a) == 0;
	}
	case OP_modify_flow_action_esp: {
		struct ibv_flow_action_esp_attr a = { 0 };

		*via = "ibv_modify_flow_action_esp";
		return ibv_modify_flow_action_esp(&fake.action, &a) == 0;
	}
	case OP_modify_qp: {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT };

		*via = "ibv_modify_qp";
		return ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0 &&
		       qp->state == IBV_QPS_INIT;
	}
	case OP_modify_qp_rate_limit: {
		struct ibv_qp_rate_limit_attr a = { .rate_limit = 1000 };

		*via = "ibv_modify_qp_rate_limit";
		return ibv_modify_qp_rate_limit(qp, &a) == 0;
	}
	case OP_modify_srq: {
		struct ibv_srq_attr a = { .srq_limit = 1 };

		*via = "ibv_modify_srq";
		return ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0;
	}
	case OP_modify_wq: {
		struct ibv_wq_attr a = { .attr_mask = IBV_WQ_ATTR_STATE, .wq_state = IBV_WQS_RDY };

		*via = "ibv_modify_wq";
		return ibv_modify_wq(&fake.wq, &a) == 0;
	}
	case OP_open_qp: {
		struct ibv_qp_open_attr a = { .qp_num = 1, .qp_type = IBV_QPT_XRC_RECV };

		*via = "ibv_open_qp";
		return ibv_open_qp(ctx, &a) == qp;
	}
	case OP_open_xrcd: {
		struct ibv_xrcd_init_attr a = { 0 };

		*via = "ibv_open_xrcd";
		return ibv_open_xrcd(ctx, &a) == &fake.xrcd;
	}
	case OP_poll_cq: {
		struct ibv_wc wc[2];

		*via = "ibv_poll_cq";
		return ibv_poll_cq(cq, 2, wc) == 0;
	}
	case OP_post_recv: {
		struct ibv_recv_wr wr = { .wr_id = 1 }, *bad = NULL;

		*via = "ibv_post_recv";
		return ibv_post_recv(qp, &wr, &bad) == 0;
	}
	case OP_post_send: {
		struct ibv_send_wr wr = { .wr_id = 1, .opcode = IBV_WR_SEND }, *bad = NULL;

		*via = "ibv_post_send";
		return ibv_post_send(qp, &wr, &bad) == 0;
	}
	case OP_post_srq_ops: {
		struct ibv_ops_wr wr = { .wr_id = 1 }, *bad = NULL;

		*via = "ibv_post_srq_ops";
		return ibv_post_srq_ops(srq, &wr, &bad) == 0;
	}
	case OP_post_srq_recv: {
		struct ibv_recv_wr wr = { .wr_id = 1 }, *bad = NULL;

		*via = "ibv_post_srq_recv";
		return ibv_post_srq_recv(srq, &wr, &bad) == 0;
	}
	case OP_query_device_ex: {
		struct ibv_device_attr_ex a;

		*via = "ibv_query_device_ex";
		return ibv_query_device_ex(ctx, NULL, &a) == 0;
	}
	case OP_query_ece: {
		struct ibv_ece ece = { 0 };

		*via = "ibv_query_ece";
		return ibv_query_ece(qp, &ece) == 0;
	}
	case OP_query_port: {
		struct ibv_port_attr a;

		*via = "ibv_query_port";
		return ibv_query_port(ctx, 1, &a) == 0 && last.port_num == 1;
	}
	case OP_query_qp: {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };
		struct ibv_qp_init_attr init;

		*via = "ibv_query_qp";
		return ibv_query_qp(qp, &a, IBV_QP_STATE, &init) == 0 &&
		       qp->state == IBV_QPS_RTS;
	}
	case OP_query_qp_data_in_order:
		*via = "ibv_query_qp_data_in_order";
		return ibv_query_qp_data_in_order(qp, IBV_WR_SEND, 0) == 0;
	case OP_query_rt_values: {
		struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

		*via = "ibv_query_rt_values_ex";
		return ibv_query_rt_values_ex(ctx, &v) == 0;
	}
	case OP_query_srq: {
		struct ibv_srq_attr a;

		*via = "ibv_query_srq";
		return ibv_query_srq(srq, &a) == 0;
	}
	case OP_read_counters: {
		uint64_t v[1];

		*via = "ibv_read_counters";
		return ibv_read_counters(&fake.counters, v, 1, 0) == 0;
	}
	case OP_reg_dm_mr:
		*via = "ibv_reg_dm_mr";
		return ibv_reg_dm_mr(pd, &fake.dm, 0, 64, IBV_ACCESS_ZERO_BASED) ==
		       &fake.vmr.ibv_mr;
	case OP_reg_dmabuf_mr:
		*via = "ibv_reg_dmabuf_mr";
		return ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE) ==
		       &fake.vmr.ibv_mr && fake.vmr.ibv_mr.pd == pd;
	case OP_reg_mr:
		*via = "ibv_reg_mr";
		return ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) ==
		       &fake.vmr.ibv_mr && fake.vmr.ibv_mr.addr == buf &&
		       fake.vmr.ibv_mr.length == sizeof(buf);
	case OP_req_notify_cq:
		*via = "ibv_req_notify_cq";
		return ibv_req_notify_cq(cq, 1) == 0;
	case OP_rereg_mr:
		*via = "ibv_rereg_mr";
		fake.vmr.mr_type = IBV_MR_TYPE_MR;
		return ibv_rereg_mr(&fake.vmr.ibv_mr, IBV_REREG_MR_CHANGE_PD, pd,
				    NULL, 0, 0) == 0;
	case OP_resize_cq:
		*via = "ibv_resize_cq";
		return ibv_resize_cq(cq, 32) == 0;
	case OP_set_ece: {
		struct ibv_ece ece = { .vendor_id = 0x5358 };

		*via = "ibv_set_ece";
		return ibv_set_ece(qp, &ece) == 0;
	}
	case OP_unimport_dm:
		*via = "ibv_unimport_dm";
		ibv_unimport_dm(&fake.dm);
		return true;
	case OP_unimport_mr:
		*via = "ibv_unimport_mr";
		ibv_unimport_mr(&fake.vmr.ibv_mr);
		return true;
	case OP_unimport_pd:
		*via = "ibv_unimport_pd";
		ibv_unimport_pd(pd);
		return true;
	case OP_COUNT:
		break;
	}
	*via = "nothing";
	return false;
}

static void reset_hits(void)
{
	memset(hits, 0, sizeof(hits));
	total_hits = 0;
}

/* Call op's entry point; it must hit op's sentinel once and nothing else. */
static void dispatch(enum op op)
{
	const char *via = NULL;
	bool ret_ok;

	reset_hits();
	ret_ok = call_public(op, &via);
	if (!ret_ok)
		printf("#   %s returned something other than the sentinel's value\n", via);
	if (hits[op] != 1 || total_hits != 1) {
		printf("#   %s: %u call(s) to %s, %u in all:", via, hits[op],
		       op_name[op], total_hits);
		for (unsigned int i = 0; i < OP_COUNT; i++)
			if (hits[i] && i != op)
				printf(" %s", op_name[i]);
		printf("\n");
	}
	tap(ret_ok && hits[op] == 1 && total_hits == 1, "op %s via %s",
	    op_name[op], via);
}

static void test_ops(void)
{
	for (unsigned int op = 0; op < OP_COUNT; op++)
		if (op != OP_free_context)	/* last, in test_close() */
			dispatch((enum op)op);
}

/* The same ops reached by second routes through the library. */
static void test_second_routes(void)
{
	struct ibv_device_attr attr;
	struct ibv_qp_init_attr_ex qa = {
		.send_cq = &fake.vcq.cq, .recv_cq = &fake.vcq.cq,
		.qp_type = IBV_QPT_RC, .comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = &fake.pd,
	};

	reset_hits();
	tap(ibv_query_device(ctx, &attr) == 0 && hits[OP_query_device_ex] == 1 &&
	    total_hits == 1, "op query_device_ex via ibv_query_device");

	reset_hits();
	tap(ibv_create_qp_ex(ctx, &qa) == &fake.vqp.qp && hits[OP_create_qp] == 1 &&
	    total_hits == 1, "op create_qp via ibv_create_qp_ex (comp_mask PD only)");

	reset_hits();
	tap(ibv_reg_mr_iova(&fake.pd, &fake, sizeof(fake), 0x1000,
			    IBV_ACCESS_LOCAL_WRITE) == &fake.vmr.ibv_mr &&
	    hits[OP_reg_mr] == 1 && total_hits == 1,
	    "op reg_mr via ibv_reg_mr_iova");
}

/* ------------------------------------------------------------------ */
/* 5. Private tails read by the public library                        */
/* ------------------------------------------------------------------ */

static void test_private_tails(void)
{
	static uint8_t buf[256];
	bool ok = true;
	int r;

	/* ibv_reg_mr_iova2() strips optional access bits unless core_support says so. */
	tdev.vdev.core_support = 0;
	ibv_reg_mr_iova2(&fake.pd, buf, sizeof(buf), 0,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	CHECK(last.access == IBV_ACCESS_LOCAL_WRITE);
	tdev.vdev.core_support = IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS;
	ibv_reg_mr_iova2(&fake.pd, buf, sizeof(buf), 0,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	CHECK(last.access == (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING));
	tdev.vdev.core_support = 0;
	tap(ok, "tail: verbs_device.core_support is where ibv_reg_mr_iova2() reads it");

	ok = true;
	reset_hits();
	fake.vmr.mr_type = IBV_MR_TYPE_NULL_MR;
	r = ibv_rereg_mr(&fake.vmr.ibv_mr, IBV_REREG_MR_CHANGE_PD, &fake.pd, NULL, 0, 0);
	CHECK(r == IBV_REREG_MR_ERR_INPUT);
	CHECK(hits[OP_rereg_mr] == 0);
	fake.vmr.mr_type = IBV_MR_TYPE_MR;
	r = ibv_rereg_mr(&fake.vmr.ibv_mr, IBV_REREG_MR_CHANGE_PD, &fake.pd, NULL, 0, 0);
	CHECK(r == 0);
	CHECK(hits[OP_rereg_mr] == 1);
	tap(ok, "tail: verbs_mr.mr_type is where ibv_rereg_mr() reads it");

	ok = true;
	fake.vqp.comp_mask = VERBS_QP_EX;
	CHECK(ibv_qp_to_qp_ex(&fake.vqp.qp) == &fake.vqp.qp_ex);
	fake.vqp.comp_mask = VERBS_QP_XRCD;
	CHECK(ibv_qp_to_qp_ex(&fake.vqp.qp) == NULL);
	fake.vqp.comp_mask = 0;
	tap(ok, "tail: verbs_qp.comp_mask is where ibv_qp_to_qp_ex() reads it");
}

/* ------------------------------------------------------------------ */
/* 6. Commands as libibverbs writes them                              */
/* ------------------------------------------------------------------ */

static void test_cmd_query_port(void)
{
	struct ibv_query_port cmd;
	struct ibv_port_attr attr;
	struct ib_uverbs_cmd_hdr h;
	bool ok = true;

	memset(&cmd, 0, sizeof(cmd));
	CHECK(ibv_cmd_query_port(ctx, 2, &attr, &cmd, sizeof(cmd)) == 0);
	capture();
	h = cap_hdr();
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_QUERY_PORT);
	CHECK(h.in_words * 4u == sizeof(cmd));
	CHECK(h.out_words * 4u == sizeof(struct ib_uverbs_query_port_resp));
	CHECK(CAP_AS(struct ibv_query_port).core_payload.port_num == 2);
	tap(ok, "cmd: ibv_cmd_query_port() falls back to QUERY_PORT write()");
}

static void test_cmd_query_device_any(void)
{
	struct ib_uverbs_ex_query_device_resp resp;
	struct ibv_device_attr_ex attr;
	size_t resp_size = sizeof(resp);
	struct ex_hdr h;
	bool ok = true;

	/*
	 * Stop short of phys_port_cnt_ex: filling it reads verbs_device.sysfs,
	 * which the fake device does not have.
	 */
	CHECK(ibv_cmd_query_device_any(ctx, NULL, &attr,
				       offsetof(struct ibv_device_attr_ex,
						phys_port_cnt_ex),
				       &resp, &resp_size) == 0);
	capture();
	h = cap_ex_hdr();
	CHECK(cap_len == (ssize_t)(sizeof(struct ex_hdr) +
				   sizeof(struct ib_uverbs_ex_query_device)));
	CHECK(h.hdr.command == (IB_USER_VERBS_CMD_FLAG_EXTENDED |
				IB_USER_VERBS_EX_CMD_QUERY_DEVICE));
	CHECK(h.hdr.in_words * 8u == sizeof(struct ib_uverbs_ex_query_device));
	CHECK(h.hdr.out_words * 8u == sizeof(resp));
	CHECK(h.ex_hdr.provider_in_words == 0 && h.ex_hdr.provider_out_words == 0);
	CHECK(h.ex_hdr.response == (uintptr_t)&resp);
	/* *resp_size becomes the kernel's response_length (0: nobody wrote it). */
	CHECK(resp_size == 0);
	tap(ok, "cmd: ibv_cmd_query_device_any() writes EX_QUERY_DEVICE");
}

static void test_cmd_alloc_pd(void)
{
	struct ib_uverbs_alloc_pd_resp resp = { .pd_handle = 0x1234 };
	struct ibv_alloc_pd cmd;
	struct ib_uverbs_cmd_hdr h;
	struct ibv_pd pd;
	bool ok = true;

	memset(&pd, 0, sizeof(pd));
	CHECK(ibv_cmd_alloc_pd(ctx, &pd, &cmd, sizeof(cmd), &resp, sizeof(resp)) == 0);
	capture();
	h = cap_hdr();
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_ALLOC_PD);
	CHECK(h.in_words * 4u == sizeof(cmd));
	CHECK(h.out_words * 4u == sizeof(resp));
	CHECK(CAP_AS(struct ibv_alloc_pd).core_payload.response == (uintptr_t)&resp);
	CHECK(pd.handle == 0x1234 && pd.context == ctx);
	tap(ok, "cmd: ibv_cmd_alloc_pd() writes ALLOC_PD and takes pd_handle");
}

static void test_cmd_reg_mr(void)
{
	struct ib_uverbs_reg_mr_resp resp = { .mr_handle = 5, .lkey = 6, .rkey = 7 };
	static uint8_t buf[8192];
	struct ibv_reg_mr cmd, c;
	struct ib_uverbs_cmd_hdr h;
	struct verbs_mr vmr;
	struct ibv_pd pd = { .context = ctx, .handle = 0x99 };
	bool ok = true;

	memset(&vmr, 0xff, sizeof(vmr));
	CHECK(ibv_cmd_reg_mr(&pd, buf, sizeof(buf), 0x10000, IBV_ACCESS_LOCAL_WRITE,
			     &vmr, &cmd, sizeof(cmd), &resp, sizeof(resp)) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct ibv_reg_mr);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_REG_MR);
	CHECK(h.out_words * 4u == sizeof(resp));
	CHECK(c.core_payload.response == (uintptr_t)&resp);
	CHECK(c.core_payload.start == (uintptr_t)buf);
	CHECK(c.core_payload.length == sizeof(buf));
	CHECK(c.core_payload.hca_va == 0x10000);
	CHECK(c.core_payload.pd_handle == 0x99);
	CHECK(c.core_payload.access_flags == IBV_ACCESS_LOCAL_WRITE);
	CHECK(vmr.ibv_mr.handle == 5 && vmr.ibv_mr.lkey == 6 && vmr.ibv_mr.rkey == 7);
	CHECK(vmr.ibv_mr.context == ctx);
	CHECK(vmr.mr_type == IBV_MR_TYPE_MR);
	CHECK(vmr.access == IBV_ACCESS_LOCAL_WRITE);
	tap(ok, "cmd: ibv_cmd_reg_mr() writes REG_MR and fills the verbs_mr tail");

	ok = true;
	CHECK(ibv_cmd_dereg_mr(&vmr) == 0);
	capture();
	h = cap_hdr();
	CHECK(cap_len == (ssize_t)(sizeof(h) + sizeof(struct ib_uverbs_dereg_mr)));
	CHECK(h.command == IB_USER_VERBS_CMD_DEREG_MR && h.out_words == 0);
	CHECK(((struct ib_uverbs_dereg_mr *)(cap + sizeof(h)))->mr_handle == 5);
	tap(ok, "cmd: ibv_cmd_dereg_mr() falls back to DEREG_MR write()");

	ok = true;
	CHECK(ibv_cmd_dealloc_pd(&pd) == 0);
	capture();
	h = cap_hdr();
	CHECK(cap_len == (ssize_t)(sizeof(h) + sizeof(struct ib_uverbs_dealloc_pd)));
	CHECK(h.command == IB_USER_VERBS_CMD_DEALLOC_PD && h.out_words == 0);
	CHECK(((struct ib_uverbs_dealloc_pd *)(cap + sizeof(h)))->pd_handle == 0x99);
	tap(ok, "cmd: ibv_cmd_dealloc_pd() falls back to DEALLOC_PD write()");
}

static void test_cmd_create_cq(void)
{
	struct usrx_create_cq cmd, c;
	struct usrx_create_cq_resp resp;
	struct ib_uverbs_cmd_hdr h;
	struct ibv_cq cq;
	bool ok = true;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	memset(&cq, 0, sizeof(cq));
	cmd.drv.flags = 0xa5a5a5a5;	/* a pattern, not a valid srx flag */
	cmd.drv.reserved = 0x5a5a5a5a;
	resp.ibv_resp.cq_handle = 9;
	resp.ibv_resp.cqe = 31;
	CHECK(ibv_cmd_create_cq(ctx, 30, NULL, 0, &cq, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct usrx_create_cq);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_CREATE_CQ);
	CHECK(h.in_words * 4u == sizeof(cmd));
	CHECK(h.out_words * 4u == sizeof(resp));
	CHECK(c.ibv_cmd.core_payload.response == (uintptr_t)&resp);
	CHECK(c.ibv_cmd.core_payload.user_handle == (uintptr_t)&cq);
	CHECK(c.ibv_cmd.core_payload.cqe == 30);
	CHECK(c.ibv_cmd.core_payload.comp_vector == 0);
	CHECK(c.ibv_cmd.core_payload.comp_channel == -1);
	CHECK(c.drv.flags == 0xa5a5a5a5 && c.drv.reserved == 0x5a5a5a5a);
	CHECK(cq.handle == 9 && cq.cqe == 31 && cq.context == ctx);
	tap(ok, "cmd: ibv_cmd_create_cq() + usrx_create_cq: CREATE_CQ, srx payload after the core");
}

static void test_cmd_create_cq_ex(void)
{
	struct usrx_create_cq_ex cmd;
	struct usrx_create_cq_ex_resp resp;
	struct ibv_cq_init_attr_ex attr = { .cqe = 63 };
	struct ib_uverbs_cmd_hdr h;
	struct ex_hdr xh;
	struct usrx_create_cq c;
	struct usrx_create_cq_ex cx;
	struct verbs_cq vcq;
	bool ok = true;

	/* No flags: libibverbs uses the legacy CREATE_CQ with the same payload. */
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	memset(&vcq, 0, sizeof(vcq));
	cmd.drv.flags = 0x11223344;
	CHECK(ibv_cmd_create_cq_ex(ctx, &attr, &vcq, &cmd.ibv_cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp), 0) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct usrx_create_cq);
	CHECK(cap_len == (ssize_t)sizeof(struct usrx_create_cq));
	CHECK(h.command == IB_USER_VERBS_CMD_CREATE_CQ);
	CHECK(h.in_words * 4u == sizeof(struct usrx_create_cq));
	CHECK(c.ibv_cmd.core_payload.cqe == 63);
	CHECK(c.ibv_cmd.core_payload.user_handle == (uintptr_t)&vcq.cq);
	CHECK(c.drv.flags == 0x11223344);
	/* The legacy core response sits right before srx's, inside resp. */
	CHECK(h.out_words * 4u == sizeof(struct ib_uverbs_create_cq_resp) +
				  sizeof(struct srx_create_cq_resp));
	CHECK(resp_ends_at(c.ibv_cmd.core_payload.response, h.out_words, 4, &resp + 1));
	CHECK(vcq.cq.context == ctx);
	tap(ok, "cmd: ibv_cmd_create_cq_ex() without flags: legacy CREATE_CQ, same srx payload");

	/* A timestamp the provider does not declare ignored forces EX_CREATE_CQ. */
	ok = true;
	memset(&resp, 0xee, sizeof(resp));
	attr.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	CHECK(ibv_cmd_create_cq_ex(ctx, &attr, &vcq, &cmd.ibv_cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp), 0) == 0);
	capture();
	xh = cap_ex_hdr();
	cx = CAP_AS(struct usrx_create_cq_ex);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(xh.hdr.command == (IB_USER_VERBS_CMD_FLAG_EXTENDED |
				 IB_USER_VERBS_EX_CMD_CREATE_CQ));
	CHECK(xh.hdr.in_words * 8u == sizeof(struct ib_uverbs_ex_create_cq));
	CHECK(xh.hdr.out_words * 8u == sizeof(struct ib_uverbs_ex_create_cq_resp));
	CHECK(xh.ex_hdr.provider_in_words * 8u == sizeof(struct srx_create_cq_cmd));
	CHECK(xh.ex_hdr.provider_out_words * 8u == sizeof(struct srx_create_cq_resp));
	CHECK(xh.ex_hdr.response == (uintptr_t)&resp);
	CHECK(cx.ibv_cmd.core_payload.flags == IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION);
	CHECK(cx.drv.flags == 0x11223344);
	/* The write_ex() path zeroes the whole response buffer first. */
	CHECK(resp.drv.ring.entries == 0);
	tap(ok, "cmd: ibv_cmd_create_cq_ex() with a timestamp: EX_CREATE_CQ, srx payload in 8-byte words");

	/* ...unless cmd_flags says the timestamp is ignored. */
	ok = true;
	CHECK(ibv_cmd_create_cq_ex(ctx, &attr, &vcq, &cmd.ibv_cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp),
				   CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX) == 0);
	capture();
	h = cap_hdr();
	CHECK(h.command == IB_USER_VERBS_CMD_CREATE_CQ);
	CHECK(cap_len == (ssize_t)sizeof(struct usrx_create_cq));
	tap(ok, "cmd: ibv_cmd_create_cq_ex() with CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX stays legacy");
}

static void test_cmd_resize_cq(void)
{
	struct usrx_resize_cq cmd, c;
	struct usrx_resize_cq_resp resp;
	struct ib_uverbs_cmd_hdr h;
	struct ibv_cq cq = { .context = ctx, .handle = 0x42, .cqe = 31 };
	bool ok = true;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.drv.op = SRX_RESIZE_PREPARE;
	resp.ibv_resp.cqe = 127;
	CHECK(ibv_cmd_resize_cq(&cq, 100, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct usrx_resize_cq);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_RESIZE_CQ);
	CHECK(h.in_words * 4u == sizeof(cmd));
	CHECK(h.out_words * 4u == sizeof(resp));
	CHECK(c.ibv_cmd.core_payload.response == (uintptr_t)&resp);
	CHECK(c.ibv_cmd.core_payload.cq_handle == 0x42);
	CHECK(c.ibv_cmd.core_payload.cqe == 100);
	CHECK(c.drv.op == SRX_RESIZE_PREPARE);
	CHECK(cq.cqe == 127);
	tap(ok, "cmd: ibv_cmd_resize_cq() + usrx_resize_cq: RESIZE_CQ, "
	    "sets cq->cqe from the core response");
}

static void test_cmd_req_notify_cq(void)
{
	struct ibv_cq cq = { .context = ctx, .handle = 0x43 };
	struct ib_uverbs_req_notify_cq k;
	struct ib_uverbs_cmd_hdr h;
	bool ok = true;

	CHECK(ibv_cmd_req_notify_cq(&cq, 1) == 0);
	capture();
	h = cap_hdr();
	memcpy(&k, cap + sizeof(h), sizeof(k));
	CHECK(cap_len == (ssize_t)(sizeof(h) + sizeof(k)));
	CHECK(h.command == IB_USER_VERBS_CMD_REQ_NOTIFY_CQ && h.out_words == 0);
	CHECK(k.cq_handle == 0x43 && k.solicited_only == 1);
	tap(ok, "cmd: ibv_cmd_req_notify_cq() writes REQ_NOTIFY_CQ");
}

/* Check the core part of a captured create-QP request. */
static bool qp_req_ok(const struct ib_uverbs_create_qp *k, const struct ibv_qp *qp,
		      uint32_t pd_handle, uint32_t cq_handle)
{
	return k->user_handle == (uintptr_t)qp && k->pd_handle == pd_handle &&
	       k->send_cq_handle == cq_handle && k->recv_cq_handle == cq_handle &&
	       k->max_send_wr == 16 && k->max_recv_wr == 8 &&
	       k->max_send_sge == 2 && k->max_recv_sge == 1 &&
	       k->max_inline_data == 64 && k->qp_type == IBV_QPT_RC &&
	       k->is_srq == 0;
}

static void test_cmd_create_qp(void)
{
	struct ibv_cq cq = { .context = ctx, .handle = 0x51 };
	struct ibv_pd pd = { .context = ctx, .handle = 0x52 };
	struct ibv_qp_cap caps = {
		.max_send_wr = 16, .max_recv_wr = 8, .max_send_sge = 2,
		.max_recv_sge = 1, .max_inline_data = 64,
	};
	struct ibv_qp_init_attr attr = {
		.send_cq = &cq, .recv_cq = &cq, .cap = caps, .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_init_attr_ex attr_ex = {
		.send_cq = &cq, .recv_cq = &cq, .cap = caps, .qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = &pd,
	};
	struct usrx_create_qp_resp resp;
	struct usrx_create_qp_ex_resp resp_ex;
	struct ibv_create_qp cmd, c;
	struct ibv_create_qp_ex cmd_ex, cx;
	struct ib_uverbs_cmd_hdr h;
	struct ex_hdr xh;
	struct ibv_qp qp;
	struct verbs_qp vqp;
	bool ok = true;

	/*
	 * The legacy write() fallback picks its response layout from the
	 * global uverbs ABI, which libibverbs reads from sysfs only when it
	 * scans devices: unknown (old) here, 6 on any kernel with RDMA. Only
	 * what does not depend on it is checked: the request, and that the
	 * response window ends where srx's payload ends.
	 */
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	memset(&qp, 0, sizeof(qp));
	CHECK(ibv_cmd_create_qp(&pd, &qp, &attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct ibv_create_qp);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_CREATE_QP);
	CHECK(h.in_words * 4u == sizeof(cmd));
	CHECK(resp_ends_at(c.core_payload.response, h.out_words, 4, &resp + 1));
	CHECK(qp_req_ok(&c.core_payload, &qp, 0x52, 0x51));
	CHECK(qp.context == ctx && qp.pd == &pd && qp.state == IBV_QPS_RESET);
	tap(ok, "cmd: ibv_cmd_create_qp() + usrx_create_qp_resp: CREATE_QP, srx response room last");

	ok = true;
	memset(&cmd, 0, sizeof(cmd));
	memset(&vqp, 0, sizeof(vqp));
	vqp.comp_mask = VERBS_QP_EX;
	CHECK(ibv_cmd_create_qp_ex(ctx, &vqp, &attr_ex, &cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp)) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct ibv_create_qp);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_CREATE_QP);
	CHECK(resp_ends_at(c.core_payload.response, h.out_words, 4, &resp + 1));
	CHECK(qp_req_ok(&c.core_payload, &vqp.qp, 0x52, 0x51));
	/* set_qp() clears comp_mask: the provider sets VERBS_QP_EX afterwards. */
	CHECK(vqp.comp_mask == 0);
	CHECK(vqp.qp.context == ctx);
	tap(ok, "cmd: ibv_cmd_create_qp_ex() writes CREATE_QP and clears verbs_qp.comp_mask");

	/* CREATE_FLAGS in comp_mask (even with no flag) forces EX_CREATE_QP. */
	ok = true;
	memset(&cmd_ex, 0, sizeof(cmd_ex));
	memset(&vqp, 0, sizeof(vqp));
	attr_ex.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	attr_ex.cap = caps;
	CHECK(ibv_cmd_create_qp_ex2(ctx, &vqp, &attr_ex, &cmd_ex, sizeof(cmd_ex),
				    &resp_ex.ibv_resp, sizeof(resp_ex)) == 0);
	capture();
	xh = cap_ex_hdr();
	cx = CAP_AS(struct ibv_create_qp_ex);
	CHECK(cap_len == (ssize_t)sizeof(cmd_ex));
	CHECK(xh.hdr.command == (IB_USER_VERBS_CMD_FLAG_EXTENDED |
				 IB_USER_VERBS_EX_CMD_CREATE_QP));
	CHECK(xh.hdr.in_words * 8u == sizeof(struct ib_uverbs_ex_create_qp));
	CHECK(xh.hdr.out_words * 8u == sizeof(struct ib_uverbs_ex_create_qp_resp));
	CHECK(xh.ex_hdr.provider_in_words == 0);
	CHECK(xh.ex_hdr.provider_out_words * 8u == sizeof(struct srx_create_qp_resp));
	CHECK(xh.ex_hdr.response == (uintptr_t)&resp_ex);
	CHECK(cx.core_payload.user_handle == (uintptr_t)&vqp.qp);
	CHECK(cx.core_payload.pd_handle == 0x52 && cx.core_payload.qp_type == IBV_QPT_RC);
	CHECK(cx.core_payload.max_send_wr == 16 && cx.core_payload.max_inline_data == 64);
	tap(ok, "cmd: ibv_cmd_create_qp_ex2() + usrx_create_qp_ex_resp: "
	    "EX_CREATE_QP, srx response in 8-byte words");
}

static void test_cmd_modify_query_qp(void)
{
	struct ibv_qp qp = { .context = ctx, .handle = 0x77 };
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp_init_attr init;
	struct ibv_modify_qp cmd, c;
	struct ibv_query_qp qcmd, qc;
	struct ib_uverbs_cmd_hdr h;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	bool ok = true;

	memset(&cmd, 0, sizeof(cmd));
	CHECK(ibv_cmd_modify_qp(&qp, &attr, mask, &cmd, sizeof(cmd)) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct ibv_modify_qp);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_MODIFY_QP);
	CHECK(h.in_words * 4u == sizeof(cmd) && h.out_words == 0);
	CHECK(c.core_payload.qp_handle == 0x77);
	CHECK(c.core_payload.attr_mask == (uint32_t)mask);
	CHECK(c.core_payload.qp_state == IBV_QPS_INIT);
	CHECK(c.core_payload.port_num == 1);
	CHECK(c.core_payload.qp_access_flags == IBV_ACCESS_REMOTE_WRITE);
	tap(ok, "cmd: ibv_cmd_modify_qp() writes MODIFY_QP");

	/* The answer is not looked at: nothing wrote it on a pipe. */
	ok = true;
	memset(&qcmd, 0, sizeof(qcmd));
	CHECK(ibv_cmd_query_qp(&qp, &attr, IBV_QP_STATE, &init, &qcmd, sizeof(qcmd)) == 0);
	capture();
	h = cap_hdr();
	qc = CAP_AS(struct ibv_query_qp);
	CHECK(cap_len == (ssize_t)sizeof(qcmd));
	CHECK(h.command == IB_USER_VERBS_CMD_QUERY_QP);
	CHECK(h.out_words * 4u == sizeof(struct ib_uverbs_query_qp_resp));
	CHECK(qc.core_payload.qp_handle == 0x77 &&
	      qc.core_payload.attr_mask == IBV_QP_STATE);
	tap(ok, "cmd: ibv_cmd_query_qp() writes QUERY_QP");
}

static void test_cmd_create_srq(void)
{
	struct ibv_pd pd = { .context = ctx, .handle = 0x61 };
	struct ibv_srq_init_attr attr = {
		.srq_context = &fake,
		.attr = { .max_wr = 100, .max_sge = 3, .srq_limit = 10 },
	};
	struct usrx_create_srq_resp resp;
	struct ibv_create_srq cmd, c;
	struct ib_uverbs_cmd_hdr h;
	struct verbs_srq vsrq;
	bool ok = true;

	memset(&cmd, 0, sizeof(cmd));
	memset(&vsrq, 0, sizeof(vsrq));
	/* Whatever is in the tail must survive: only the ibv_srq is set. */
	vsrq.srq_type = IBV_SRQT_TM;
	vsrq.xrcd = (struct verbs_xrcd *)&fake.xrcd;
	vsrq.cq = &fake.vcq.cq;
	vsrq.srq_num = 0x5a5a;
	/* What srx.ko would answer: 128 WQEs of 4 SGEs granted. */
	memset(&resp, 0, sizeof(resp));
	resp.ibv_resp.srq_handle = 0x62;
	resp.ibv_resp.max_wr = 128;
	resp.ibv_resp.max_sge = 4;
	resp.ibv_resp.srqn = 0x63;
	CHECK(ibv_cmd_create_srq(&pd, &vsrq.srq, &attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp)) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct ibv_create_srq);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_CREATE_SRQ);
	CHECK(h.in_words * 4u == sizeof(cmd));
	CHECK(resp_ends_at(c.core_payload.response, h.out_words, 4, &resp + 1));
	CHECK(c.core_payload.user_handle == (uintptr_t)&vsrq.srq);
	CHECK(c.core_payload.pd_handle == 0x61);
	CHECK(c.core_payload.max_wr == 100 && c.core_payload.max_sge == 3 &&
	      c.core_payload.srq_limit == 10);
	CHECK(vsrq.srq.context == ctx);
	CHECK(vsrq.srq_type == IBV_SRQT_TM &&
	      vsrq.xrcd == (struct verbs_xrcd *)&fake.xrcd &&
	      vsrq.cq == &fake.vcq.cq && vsrq.srq_num == 0x5a5a);
	tap(ok, "cmd: ibv_cmd_create_srq() + usrx_create_srq_resp: CREATE_SRQ, "
	    "srx response room last, verbs_srq tail untouched");

	/*
	 * The core response the write() fallback reads depends on the global
	 * uverbs ABI, as for QPs (rdma-core v44.0 libibverbs/cmd_srq.c). Above
	 * 5 (every kernel with RDMA): the whole ib_uverbs_create_srq_resp, and
	 * the granted max_wr/max_sge go back into attr. At 5 or below, and
	 * unknown (0) counts as below, which is what this process has because
	 * it never scans devices: v44.0 kern-abi.h's ibv_create_srq_resp_v5,
	 * the handle alone, in the 4 bytes right before srx's payload (where
	 * srqn sits in the full layout), and attr keeps what was asked. It
	 * must be exactly one of the two.
	 */
	ok = true;
	if (c.core_payload.response == (uintptr_t)&resp) {
		printf("# create_srq: uverbs ABI > 5, full response\n");
		CHECK(h.out_words * 4u == sizeof(resp));
		CHECK(vsrq.srq.handle == 0x62);
		CHECK(attr.attr.max_wr == 128 && attr.attr.max_sge == 4);
	} else {
		printf("# create_srq: uverbs ABI unknown here, v5 response (handle only)\n");
		CHECK(c.core_payload.response ==
		      (uintptr_t)&resp.drv - sizeof(uint32_t));
		CHECK(h.out_words * 4u == sizeof(uint32_t) + sizeof(resp.drv));
		CHECK(vsrq.srq.handle == 0x63);
		CHECK(attr.attr.max_wr == 100 && attr.attr.max_sge == 3);
	}
	CHECK(attr.attr.srq_limit == 10 && attr.srq_context == &fake);
	tap(ok, "cmd: ibv_cmd_create_srq() takes srq_handle (and at ABI 6 the "
	    "granted max_wr/max_sge) from where the response has them");
}

/*
 * The one libibverbs function that writes verbs_srq's tail (set_vsrq() in
 * rdma-core v44.0 libibverbs/cmd_srq.c), declared here only: srx has no
 * XRC and libsrx does not use it. Prototype from v44.0 libibverbs/driver.h,
 * command from v44.0 libibverbs/kern-abi.h, and the layout of struct
 * verbs_xrcd, whose handle it reads, from driver.h.
 */
VERBS_PRIV_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq);
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);

struct test_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

static void test_cmd_srq_tail(void)
{
	struct ibv_cq cq = { .context = ctx, .handle = 0x64 };
	struct ibv_pd pd = { .context = ctx, .handle = 0x65 };
	struct test_xrcd xrcd = { .xrcd = { .context = ctx }, .handle = 0x66 };
	struct ibv_srq_init_attr_ex attr = {
		.attr = { .max_wr = 100, .max_sge = 3 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC, .pd = &pd, .xrcd = &xrcd.xrcd, .cq = &cq,
	};
	struct usrx_create_srq_resp resp;
	struct ibv_create_xsrq cmd, c;
	struct ib_uverbs_cmd_hdr h;
	struct {
		struct verbs_srq vsrq;
		uint64_t after;		/* must stay untouched */
	} o;
	bool ok = true;

	memset(&cmd, 0, sizeof(cmd));
	memset(&o, 0xa5, sizeof(o));
	memset(&resp, 0, sizeof(resp));
	resp.ibv_resp.srq_handle = 0x67;
	resp.ibv_resp.max_wr = 128;
	resp.ibv_resp.max_sge = 4;
	resp.ibv_resp.srqn = 0x68;
	/* XRC takes CREATE_XSRQ, whatever the uverbs ABI. */
	CHECK(ibv_cmd_create_srq_ex(ctx, &o.vsrq, &attr, &cmd, sizeof(cmd),
				    &resp.ibv_resp, sizeof(resp)) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct ibv_create_xsrq);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_CREATE_XSRQ);
	CHECK(h.in_words * 4u == sizeof(cmd));
	CHECK(h.out_words * 4u == sizeof(resp));
	CHECK(c.core_payload.response == (uintptr_t)&resp);
	CHECK(c.core_payload.user_handle == (uintptr_t)&o.vsrq.srq);
	CHECK(c.core_payload.srq_type == IBV_SRQT_XRC);
	CHECK(c.core_payload.pd_handle == 0x65 && c.core_payload.cq_handle == 0x64 &&
	      c.core_payload.xrcd_handle == 0x66);
	CHECK(o.vsrq.srq.context == ctx && o.vsrq.srq.handle == 0x67);
	CHECK(attr.attr.max_wr == 128 && attr.attr.max_sge == 4);
	CHECK(o.vsrq.srq_type == IBV_SRQT_XRC);
	CHECK(o.vsrq.xrcd == (struct verbs_xrcd *)&xrcd);
	CHECK(o.vsrq.cq == &cq);
	CHECK(o.vsrq.srq_num == 0x68);
	CHECK(o.after == 0xa5a5a5a5a5a5a5a5ull);
	tap(ok, "tail: ibv_cmd_create_srq_ex() (XRC) writes verbs_srq.srq_type, xrcd, cq "
	    "and srq_num where they are declared");
}

static void test_cmd_modify_query_srq(void)
{
	struct ibv_srq srq = { .context = ctx, .handle = 0x69 };
	struct ibv_srq_attr attr = { .max_wr = 200, .max_sge = 5, .srq_limit = 16 };
	struct ibv_modify_srq cmd, c;
	struct ibv_query_srq qcmd, qc;
	struct ib_uverbs_cmd_hdr h;
	int mask = IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT;
	bool ok = true;

	memset(&cmd, 0, sizeof(cmd));
	CHECK(ibv_cmd_modify_srq(&srq, &attr, mask, &cmd, sizeof(cmd)) == 0);
	capture();
	h = cap_hdr();
	c = CAP_AS(struct ibv_modify_srq);
	CHECK(cap_len == (ssize_t)sizeof(cmd));
	CHECK(h.command == IB_USER_VERBS_CMD_MODIFY_SRQ);
	CHECK(h.in_words * 4u == sizeof(cmd) && h.out_words == 0);
	CHECK(c.core_payload.srq_handle == 0x69);
	CHECK(c.core_payload.attr_mask == (uint32_t)mask);
	CHECK(c.core_payload.max_wr == 200 && c.core_payload.srq_limit == 16);
	tap(ok, "cmd: ibv_cmd_modify_srq() writes MODIFY_SRQ");

	/*
	 * The response is libibverbs' own buffer (on its stack, cmd.c), not
	 * one of ours: nothing can prefill it on a pipe, so the values it
	 * copies into attr are not looked at. Its size and the request are.
	 */
	ok = true;
	memset(&qcmd, 0xff, sizeof(qcmd));
	CHECK(ibv_cmd_query_srq(&srq, &attr, &qcmd, sizeof(qcmd)) == 0);
	capture();
	h = cap_hdr();
	qc = CAP_AS(struct ibv_query_srq);
	CHECK(cap_len == (ssize_t)sizeof(qcmd));
	CHECK(h.command == IB_USER_VERBS_CMD_QUERY_SRQ);
	CHECK(h.in_words * 4u == sizeof(qcmd));
	CHECK(h.out_words * 4u == sizeof(struct ib_uverbs_query_srq_resp));
	CHECK(qc.core_payload.srq_handle == 0x69 && qc.core_payload.reserved == 0);
	CHECK(qc.core_payload.response != 0 &&
	      qc.core_payload.response != UINT64_MAX);
	tap(ok, "cmd: ibv_cmd_query_srq() writes QUERY_SRQ");
}

static void test_cmd_ah(void)
{
	struct ib_uverbs_create_ah_resp resp = { .ah_handle = 0x55 };
	struct ibv_pd pd = { .context = ctx, .handle = 0x56 };
	struct ibv_ah_attr attr = {
		.is_global = 1, .port_num = 1, .sl = 3,
		.grh = { .dgid = { .raw = { 0xfe, 0x80, [15] = 0x42 } },
			 .sgid_index = 2, .hop_limit = 64 },
	};
	struct ib_uverbs_create_ah k;
	struct ib_uverbs_cmd_hdr h;
	struct ibv_ah ah;
	bool ok = true;

	memset(&ah, 0, sizeof(ah));
	CHECK(ibv_cmd_create_ah(&pd, &ah, &attr, &resp, sizeof(resp)) == 0);
	capture();
	h = cap_hdr();
	memcpy(&k, cap + sizeof(h), sizeof(k));
	CHECK(cap_len == (ssize_t)(sizeof(h) + sizeof(k)));
	CHECK(h.command == IB_USER_VERBS_CMD_CREATE_AH);
	CHECK(h.out_words * 4u == sizeof(resp));
	CHECK(k.response == (uintptr_t)&resp && k.user_handle == (uintptr_t)&ah);
	CHECK(k.pd_handle == 0x56 && k.attr.port_num == 1 && k.attr.sl == 3);
	CHECK(k.attr.is_global == 1 && k.attr.grh.sgid_index == 2 &&
	      k.attr.grh.hop_limit == 64 && k.attr.grh.dgid[15] == 0x42);
	CHECK(ah.handle == 0x55 && ah.context == ctx);
	tap(ok, "cmd: ibv_cmd_create_ah() writes CREATE_AH and takes ah_handle");

	ok = true;
	CHECK(ibv_cmd_destroy_ah(&ah) == 0);
	capture();
	h = cap_hdr();
	CHECK(cap_len == (ssize_t)(sizeof(h) + sizeof(struct ib_uverbs_destroy_ah)));
	CHECK(h.command == IB_USER_VERBS_CMD_DESTROY_AH && h.out_words == 0);
	CHECK(((struct ib_uverbs_destroy_ah *)(cap + sizeof(h)))->ah_handle == 0x55);
	tap(ok, "cmd: ibv_cmd_destroy_ah() falls back to DESTROY_AH write()");
}

/* ------------------------------------------------------------------ */
/* 7. Closing                                                         */
/* ------------------------------------------------------------------ */

static bool fd_closed(int fd)
{
	return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

static void test_close(void)
{
	bool ok = true;

	/* A debug log below the default level: must link and print nothing. */
	verbs_priv_log(&tctx->ibv_ctx, VERBS_LOG_DEBUG, "closing %d\n", 1);

	dispatch(OP_free_context);
	/* Forget every pointer into the context, so LeakSanitizer can judge. */
	ctx = NULL;
	tctx = NULL;
	memset(&fake, 0, sizeof(fake));
	memset(&last, 0, sizeof(last));

	CHECK(atomic_load(&tdev.vdev.refcount) == 1);
	CHECK(fd_closed(cmd_pipe[1]));
	CHECK(fd_closed(async_pipe[0]));
	tap(ok, "close: verbs_uninit_context() closed cmd_fd and async_fd and dropped the device");
}

int main(void)
{
	int pipe_flags = O_CLOEXEC | O_NONBLOCK;

	printf("TAP version 13\n");
	if (pipe2(cmd_pipe, pipe_flags) || pipe2(async_pipe, pipe_flags) ||
	    pipe2(chan_pipe, pipe_flags)) {
		printf("Bail out! pipe2: %s\n", strerror(errno));
		return 1;
	}

	test_static_layout();
	test_symbols();
	test_open();
	test_ops();
	test_second_routes();
	test_private_tails();
	test_cmd_query_port();
	test_cmd_query_device_any();
	test_cmd_alloc_pd();
	test_cmd_reg_mr();
	test_cmd_create_cq();
	test_cmd_create_cq_ex();
	test_cmd_resize_cq();
	test_cmd_req_notify_cq();
	test_cmd_create_qp();
	test_cmd_modify_query_qp();
	test_cmd_create_srq();
	test_cmd_srq_tail();
	test_cmd_modify_query_srq();
	test_cmd_ah();
	test_close();

	/* The ends libibverbs did not own. */
	close(cmd_pipe[0]);
	close(async_pipe[1]);
	close(chan_pipe[0]);
	close(chan_pipe[1]);

	printf("1..%u\n", tap_count);
	printf("%u passed, %u failed\n", tap_count - tap_failed, tap_failed);
	return tap_failed ? 1 : 0;
}
