/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * verbs-private.h - the part of libibverbs' private provider ABI that libsrx
 * uses, declared by srx itself.
 *
 * libibverbs loads a provider with dlopen() and the two then talk through
 * structures and functions that rdma-core keeps private (its
 * libibverbs/driver.h and libibverbs/kern-abi.h, which Debian does not ship).
 * Their layout is frozen per value of the symbol version
 * IBVERBS_PRIVATE_<n>; Debian 12 ships rdma-core 44, whose value is 34. This
 * header re-declares, from the layouts of rdma-core v44.0, only what a simple
 * provider needs, on top of the public <infiniband/verbs.h> and the kernel
 * uAPI headers in <rdma/>. Each declaration names the v44.0 file its layout
 * comes from.
 *
 * Nothing here is checked by the compiler against libibverbs: a wrong order
 * or type is silent memory corruption at run time. Two guards exist:
 * userspace/check-libibverbs refuses any libibverbs other than rdma-core 44
 * (private ABI 34) at build time, and selftests/host/verbs_layout_test.c
 * drives the installed library through every declaration below. Port this
 * file, and run that test, before building against any other rdma-core.
 *
 * Naming: what libibverbs defines keeps its libibverbs name (it is the ABI);
 * helpers that exist only here are prefixed verbs_priv_ / VERBS_PRIV_.
 */
#ifndef SRX_VERBS_PRIVATE_H
#define SRX_VERBS_PRIVATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

/* The private ABI these declarations describe (IBVERBS_PRIVATE_34). */
#define VERBS_PRIV_ABI_VERSION 34
#define VERBS_PRIV_ABI_NAME "IBVERBS_PRIVATE_34"

/* container_of(); through uintptr_t so that it also takes const pointers. */
#define VERBS_PRIV_CONTAINER(ptr, type, member) \
	((type *)((uintptr_t)(ptr) - offsetof(type, member)))

/* ------------------------------------------------------------------ */
/* Logging (rdma-core v44.0 libibverbs/driver.h)                      */
/* ------------------------------------------------------------------ */

/* Levels, compared against $VERBS_LOG_LEVEL by libibverbs. */
enum {
	VERBS_LOG_LEVEL_NONE,
	VERBS_LOG_ERR,
	VERBS_LOG_WARN,
	VERBS_LOG_INFO,
	VERBS_LOG_DEBUG,
};

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));

/* Log through libibverbs, prefixed with the device and the caller. */
#define verbs_priv_log(vctx, level, fmt, ...)                                 \
	__verbs_log((vctx), (level), "%s: %s: " fmt,                          \
		    (vctx)->context.device->name, __func__, ##__VA_ARGS__)

/* ------------------------------------------------------------------ */
/* Device matching and registration (rdma-core v44.0 libibverbs/driver.h) */
/* ------------------------------------------------------------------ */

/* verbs_match_ent.kind; a table ends with an all-zero entry (SENTINEL). */
enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

/* One entry of verbs_device_ops.match_table. */
struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;	/* VERBS_MATCH_MODALIAS */
		uint64_t driver_id;	/* VERBS_MATCH_DRIVER_ID: enum rdma_driver_id */
	} u;
	uint16_t vendor;		/* VERBS_MATCH_PCI */
	uint16_t device;		/* VERBS_MATCH_PCI */
	uint8_t kind;
};

/*
 * Match table entries. libibverbs compares driver ids with the value the
 * kernel reports over netlink (RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID) before it
 * tries any other kind of match.
 */
#define VERBS_PRIV_MATCH_DRIVER_ID(id)                                        \
	{ .u.driver_id = (id), .kind = VERBS_MATCH_DRIVER_ID }
#define VERBS_PRIV_MATCH_END { .kind = VERBS_MATCH_SENTINEL }

/*
 * The sysfs/netlink description of one uverbs device. libibverbs owns and
 * frees it; a provider only passes the pointer back (to match_device,
 * alloc_device or ibv_read_ibdev_sysfs_file()), so it stays opaque here.
 */
struct verbs_sysfs_dev;

struct verbs_device;

/*
 * What a provider registers (rdma-core v44.0 libibverbs/driver.h). Member
 * order is ABI.
 *
 * match_min_abi_version..match_max_abi_version must contain the device's
 * uverbs ABI version (the kernel driver's ops.uverbs_abi_ver).
 * static_providers is for statically linked libibverbs only: NULL.
 * match_device, if set, runs after the table match and has the last word.
 * alloc_context gets ownership of cmd_fd (it must close it on failure).
 * alloc_device allocates the provider's device (struct verbs_device first);
 * uninit_device (mandatory: also called when set-up fails after
 * alloc_device) frees it when libibverbs drops its last reference.
 */
struct verbs_device_ops {
	const char *name;

	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;

	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* ccan's struct list_node, as embedded by libibverbs. */
struct verbs_priv_list_node {
	struct verbs_priv_list_node *next;
	struct verbs_priv_list_node *prev;
};

/*
 * A device as libibverbs sees it (rdma-core v44.0 libibverbs/driver.h). The
 * provider embeds it first in its own device structure; libibverbs fills
 * every member after alloc_device returns.
 */
struct verbs_device {
	struct ibv_device device;	/* first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct verbs_priv_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;		/* IB_UVERBS_CORE_SUPPORT_* */
};

static inline struct verbs_device *verbs_get_device(const struct ibv_device *dev)
{
	return VERBS_PRIV_CONTAINER(dev, struct verbs_device, device);
}

/* rdma-core v44.0 libibverbs/init.c; the suffix is the private ABI number. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

/*
 * Register a provider when libibverbs dlopen()s it. Unlike rdma-core's own
 * macro this exports no symbol: a dlopen()ed provider needs none.
 */
#define VERBS_PRIV_PROVIDER_REGISTER(ops)                                     \
	static void __attribute__((constructor)) verbs_priv_register_##ops(void) \
	{                                                                     \
		verbs_register_driver_34(&(ops));                             \
	}

/* ------------------------------------------------------------------ */
/* Objects with a libibverbs-private tail (rdma-core v44.0 libibverbs/driver.h) */
/* ------------------------------------------------------------------ */

/* verbs_mr.mr_type */
enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

/* Every MR a provider returns is one of these; ibv_cmd_reg_mr() fills the tail. */
struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

static inline struct verbs_mr *verbs_get_mr(struct ibv_mr *mr)
{
	return VERBS_PRIV_CONTAINER(mr, struct verbs_mr, ibv_mr);
}

/* verbs_qp.comp_mask */
enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	/*
	 * ibv_qp_to_qp_ex() returns &qp_ex only with this bit set. The
	 * ibv_cmd_create_qp* functions clear comp_mask: a provider that
	 * implements the ibv_wr_* API sets the bit after they return.
	 */
	VERBS_QP_EX = 1 << 1,
};

struct verbs_xrcd;

/* Every QP created through ibv_cmd_create_qp_ex*() is one of these. */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;	/* qp_ex.qp_base is qp */
	};
	uint32_t comp_mask;		/* enum verbs_qp_mask */
	struct verbs_xrcd *xrcd;	/* with VERBS_QP_XRCD only */
};

/*
 * Every SRQ a provider returns starts with one of these. Only
 * ibv_cmd_create_srq_ex() (XRC, cmd_srq.c) writes the tail, for providers
 * such as mlx4 to read; ibv_cmd_create_srq() sets only the ibv_srq.
 */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

/* ibv_cmd_create_cq_ex() takes one of these. */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/* The answer of ibv_query_gid_type(). */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
	IBV_GID_TYPE_SYSFS_ROCE_V2,
};

/* cmd_flags of ibv_cmd_create_cq_ex() */
enum create_cq_cmd_flags {
	/* The provider ignores completion timestamps: no need for the _EX write() */
	CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX = 1 << 0,
};

/* ------------------------------------------------------------------ */
/* The provider's operations (rdma-core v44.0 libibverbs/driver.h)    */
/* ------------------------------------------------------------------ */

/*
 * Every operation a provider may implement, in v44.0's order (alphabetical).
 * verbs_set_ops() copies each non-NULL member, so the whole structure is ABI
 * even though srx fills only a few: the order and count are checked by the
 * layout test (76 function pointers in v44.0).
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(
		struct ibv_context *context,
		struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(
		struct ibv_context *context,
		struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(
		struct ibv_context *context,
		struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

#define VERBS_PRIV_CONTEXT_OPS_COUNT 76
_Static_assert(sizeof(struct verbs_context_ops) ==
	       VERBS_PRIV_CONTEXT_OPS_COUNT * sizeof(void (*)(void)),
	       "verbs_context_ops must be 76 function pointers (v44.0)");

/* ------------------------------------------------------------------ */
/* Context set-up (rdma-core v44.0 libibverbs/driver.h, device.c, dummy_ops.c) */
/* ------------------------------------------------------------------ */

/*
 * Allocate alloc_size zeroed bytes and initialise the struct verbs_context
 * that lives context_offset bytes into them (the offset is passed disguised
 * as a pointer): it takes a device reference, stores cmd_fd (whose ownership
 * it takes: closed on failure), sets async_fd to -1, installs the no-op ops,
 * probes cmd_fd with one ioctl() for write()-over-ioctl support, and stamps
 * driver_id into every ioctl() the context issues. The kernel rejects
 * ioctls whose driver_id differs from the device's: pass SRX_DRIVER_ID.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);

/*
 * drv_ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, drv_ctx, member,
 * driver_id): allocate *drv_ctx, whose struct verbs_context is .member.
 */
#define verbs_init_and_alloc_context(ibdev, cmd_fd, drv_ctx_ptr, ctx_member,  \
				     driver_id)                               \
	((__typeof__(drv_ctx_ptr))_verbs_init_and_alloc_context(              \
		(ibdev), (cmd_fd), sizeof(*(drv_ctx_ptr)),                    \
		(struct verbs_context *)(uintptr_t)offsetof(                  \
			__typeof__(*(drv_ctx_ptr)), ctx_member),              \
		(driver_id)))

/* Undo the above except the free: closes cmd_fd and async_fd, drops the device. */
void verbs_uninit_context(struct verbs_context *context);

/* Install every non-NULL member of ops; may be called more than once. */
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

/* What ibv_create_cq() does to a new CQ; providers rarely need it. */
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);

/*
 * ibv_open_device() minus the checks: opens the device's uverbs file if it
 * has sysfs information, calls ops->alloc_context and installs the library's
 * own entries (create_cq_ex, query_port). The layout test uses it.
 */
struct ibv_context *verbs_open_device(struct ibv_device *device,
				      void *private_data);

/* Read <ibdev sysfs dir>/<fnfmt...> into buf; returns the length or -1. */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------ */
/* Command buffers (rdma-core v44.0 libibverbs/kern-abi.h)            */
/* ------------------------------------------------------------------ */

/*
 * A legacy command is the write() header followed by the kernel's core
 * structure; a provider's own payload follows that (see VERBS_PRIV_DRV_REQ).
 * Extended commands start with struct ex_hdr instead. Responses are the
 * kernel's core response structure, then the provider's payload.
 *
 * libibverbs finds the provider payload at (char *)cmd + sizeof(<core
 * wrapper>) with length cmd_size - sizeof(<core wrapper>), and likewise for
 * responses. It sends them as UVERBS_ATTR_UHW_IN/OUT when it uses ioctl(),
 * or, on the write() fallback, writes the core header into the bytes right
 * before the payload: so the payload must follow the core part with no gap.
 */
struct ex_hdr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
};

/*
 * The kernel structures end in a flexible driver_data[] array; embedding
 * them is a GNU extension that rdma-core itself relies on. Keep clang and
 * gcc -Wpedantic quiet about it only where it happens.
 */
#ifdef __clang__
#define VERBS_PRIV_FLEX_BEGIN                                                  \
	_Pragma("clang diagnostic push")                                      \
	_Pragma("clang diagnostic ignored \"-Wgnu-variable-sized-type-not-at-end\"") \
	_Pragma("clang diagnostic ignored \"-Wflexible-array-extensions\"")
#define VERBS_PRIV_FLEX_END _Pragma("clang diagnostic pop")
#else
#define VERBS_PRIV_FLEX_BEGIN                                                  \
	_Pragma("GCC diagnostic push")                                        \
	_Pragma("GCC diagnostic ignored \"-Wpedantic\"")
#define VERBS_PRIV_FLEX_END _Pragma("GCC diagnostic pop")
#endif

/* A legacy (write()) command: header + kernel core structure. */
#define VERBS_PRIV_CMD(name, kstruct)                                         \
	VERBS_PRIV_FLEX_BEGIN                                                 \
	struct name {                                                         \
		struct ib_uverbs_cmd_hdr hdr;                                 \
		struct kstruct core_payload;                                  \
	};                                                                    \
	VERBS_PRIV_FLEX_END                                                   \
	_Static_assert(offsetof(struct name, core_payload) ==                 \
		       sizeof(struct ib_uverbs_cmd_hdr), #name " layout");    \
	_Static_assert(sizeof(struct name) == sizeof(struct ib_uverbs_cmd_hdr) + \
		       sizeof(struct kstruct), #name " size")

/* An extended command: struct ex_hdr + kernel core structure. */
#define VERBS_PRIV_CMD_EX(name, kstruct)                                      \
	VERBS_PRIV_FLEX_BEGIN                                                 \
	struct name {                                                         \
		struct ex_hdr hdr;                                            \
		struct kstruct core_payload;                                  \
	};                                                                    \
	VERBS_PRIV_FLEX_END                                                   \
	_Static_assert(offsetof(struct name, core_payload) ==                 \
		       sizeof(struct ex_hdr), #name " layout");               \
	_Static_assert(sizeof(struct name) == sizeof(struct ex_hdr) +         \
		       sizeof(struct kstruct), #name " size");                \
	_Static_assert(sizeof(struct name) % 8 == 0, #name " alignment")

VERBS_PRIV_CMD(ibv_get_context, ib_uverbs_get_context);
VERBS_PRIV_CMD(ibv_query_port, ib_uverbs_query_port);
VERBS_PRIV_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
VERBS_PRIV_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
VERBS_PRIV_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr);
VERBS_PRIV_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw);
VERBS_PRIV_CMD(ibv_create_cq, ib_uverbs_create_cq);
VERBS_PRIV_CMD(ibv_resize_cq, ib_uverbs_resize_cq);
VERBS_PRIV_CMD(ibv_create_qp, ib_uverbs_create_qp);
VERBS_PRIV_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
VERBS_PRIV_CMD(ibv_query_qp, ib_uverbs_query_qp);
VERBS_PRIV_CMD(ibv_create_srq, ib_uverbs_create_srq);
VERBS_PRIV_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
VERBS_PRIV_CMD(ibv_query_srq, ib_uverbs_query_srq);
VERBS_PRIV_CMD_EX(ibv_create_cq_ex, ib_uverbs_ex_create_cq);
VERBS_PRIV_CMD_EX(ibv_create_qp_ex, ib_uverbs_ex_create_qp);

/*
 * A provider command: the core command, then the provider's payload.
 * unit is 4 for a legacy command and 8 for an extended one (the kernel
 * counts extended payloads in 8-byte words). Declares struct name with
 * members ibv_cmd and drv.
 */
#define VERBS_PRIV_DRV_REQ(name, core, drvstruct, unit)                       \
	VERBS_PRIV_FLEX_BEGIN                                                 \
	struct name {                                                         \
		struct core ibv_cmd;                                          \
		struct drvstruct drv;                                         \
	};                                                                    \
	VERBS_PRIV_FLEX_END                                                   \
	_Static_assert(offsetof(struct name, drv) == sizeof(struct core),     \
		       #name ": gap before the driver payload");              \
	_Static_assert(sizeof(struct name) == sizeof(struct core) +           \
		       sizeof(struct drvstruct), #name ": tail padding");     \
	_Static_assert(sizeof(struct drvstruct) % (unit) == 0,                \
		       #name ": payload not a whole number of words")

/* The same for a response: members ibv_resp and drv. */
#define VERBS_PRIV_DRV_RESP(name, core, drvstruct, unit)                      \
	VERBS_PRIV_FLEX_BEGIN                                                 \
	struct name {                                                         \
		struct core ibv_resp;                                         \
		struct drvstruct drv;                                         \
	};                                                                    \
	VERBS_PRIV_FLEX_END                                                   \
	_Static_assert(offsetof(struct name, drv) == sizeof(struct core),     \
		       #name ": gap before the driver payload");              \
	_Static_assert(sizeof(struct name) == sizeof(struct core) +           \
		       sizeof(struct drvstruct), #name ": tail padding");     \
	_Static_assert(sizeof(struct drvstruct) % (unit) == 0,                \
		       #name ": payload not a whole number of words")

/* ------------------------------------------------------------------ */
/* Command helpers, exported as IBVERBS_PRIVATE_34                    */
/* (rdma-core v44.0 libibverbs/driver.h; cmd*.c)                      */
/* ------------------------------------------------------------------ */

/*
 * All return 0 or a positive errno value (some also set errno). Each tries
 * ioctl() first when it has an ioctl method and falls back to write() when
 * the kernel lacks it; write()-only commands still travel by ioctl()
 * (UVERBS_METHOD_INVOKE_WRITE) on kernels that have it, such as 6.1.
 * cmd_size/resp_size are the sizes of the provider wrappers; the core
 * structures are found by sizeof of the declared parameter type.
 */

/*
 * cmd_device.c: GET_CONTEXT by ioctl, write() fallback. Sets
 * num_comp_vectors; by ioctl also verbs_device.core_support (and async_fd
 * stays -1: verbs_open_device() allocates it after alloc_context returns),
 * by write() async_fd from the core response.
 */
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);

/*
 * cmd_device.c: EX_QUERY_DEVICE when attr_size asks for more than
 * orig_attr, else QUERY_DEVICE; write() only. resp/resp_size may be NULL; on
 * return *resp_size is the kernel's response_length. Filling
 * phys_port_cnt_ex reads verbs_device.sysfs.
 */
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);

/* cmd_device.c: QUERY_PORT (ioctl, write() fallback). */
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);

/* cmd.c: ALLOC_PD, write() only. cmd_pd.c: dealloc (ioctl, fallback). */
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

/* cmd.c: REG_MR, write() only; fills vmr (handle, keys, mr_type, access). */
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
/*
 * cmd.c: REREG_MR, write() only; sets the handle and flags itself, and on
 * success the new keys (and, with CHANGE_PD, the context).
 */
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
/* cmd_mr.c: ioctl, write() fallback. */
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
/*
 * cmd.c: ALLOC_MW, write() only; fills context, pd, rkey, handle and type.
 * cmd_mw.c: DEALLOC_MW (ioctl, write() fallback).
 */
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);

/*
 * cmd_cq.c: CQ_CREATE by ioctl, falling back to CREATE_CQ or EX_CREATE_CQ.
 * They set cq->context, cq->handle and cq->cqe. On the ioctl path the
 * kernel's core response structure is not written at all (the handle and
 * cqe come back as attributes), so read cq->handle/cq->cqe, never
 * resp->cq_handle/cqe. ibv_cmd_create_cq_ex() only uses the extended
 * write() when asked for flags other than a timestamp the provider declares
 * it ignores (cmd_flags CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX).
 */
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
/* Waits until every reported event has been acknowledged. */
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
/* cmd.c: RESIZE_CQ, write() only; sets cq->cqe from the core response. */
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
/* cmd.c: write() only; the kernel must enable them in uverbs_cmd_mask. */
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/*
 * cmd_qp.c: QP_CREATE by ioctl, falling back to CREATE_QP or EX_CREATE_QP.
 * They set context, handle, qp_num, state (RESET), pd, cqs, srq, type and the
 * mutex/cond of the QP, write the granted caps back into the attr, and set
 * verbs_qp.comp_mask to 0 or VERBS_QP_XRCD. As for CQs, the core response
 * structure is not written on the ioctl path.
 */
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,
		      size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
		      size_t resp_size);
/* comp_mask: PD, XRCD and SEND_OPS_FLAGS only. */
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
/* Any comp_mask; the driver payloads ride in extended (8-byte) words. */
int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *attr_ex,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size);
/* cmd.c: write() only; attr_mask bits from IBV_QP_RATE_LIMIT up: EOPNOTSUPP. */
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
/* cmd_qp.c: ioctl, write() fallback; waits for acknowledged events. */
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
/* cmd.c: write() only (no driver payload). */
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

/*
 * cmd_srq.c: SRQ_CREATE by ioctl, write() fallback; sets srq->context,
 * handle, mutex and cond, and writes the granted max_wr and max_sge back
 * into attr (not on the fallback of uverbs ABI 5, whose response is the
 * handle alone: libsrx sets attr from its ring). As for QPs, the core
 * response structure is not written on the ioctl path. Destroy waits until
 * every reported event has been acknowledged.
 */
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
/* cmd.c: MODIFY_SRQ and QUERY_SRQ, write() only. */
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);

/* cmd.c: CREATE_AH, write() only. cmd_ah.c: destroy (ioctl, fallback). */
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

/* cmd.c: ATTACH_MCAST and DETACH_MCAST, write() only. */
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

/* verbs.c: the type (RoCE v1 or v2) of GID index, from the kernel. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum ibv_gid_type_sysfs *type);

#endif /* SRX_VERBS_PRIVATE_H */
