/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * srx user ABI: what srx.ko and libsrx exchange.
 *
 * Two kinds of things cross the boundary:
 *
 *  - Driver-private command and response payloads. They ride behind the
 *    RDMA core's own structures, in the UVERBS_ATTR_UHW_IN/OUT attributes of
 *    the uverbs ioctl (or after the core part of a write() command).
 *
 *  - Rings in shared memory. Every completion queue and every work queue is
 *    one region of kernel memory, charged to the creating process's memory
 *    cgroup, that the process maps with mmap() on its uverbs file, at the
 *    offset the create response returns. The response
 *    also returns where each field lives inside the region (io_uring style),
 *    so userspace computes every pointer from the response and the layout
 *    can change without breaking an older provider. The structures below
 *    describe the current layout; they are not a promise about offsets.
 *
 * Ring indices are free-running 32-bit counters: they are masked with
 * (entries - 1) only when an entry is addressed, no slot is wasted, and
 * (u32)(prod - cons) is the fill level. entries is always a power of two.
 *
 * Memory-ordering contract (the same words are used in the kernel's ring
 * code and in libsrx's barrier header):
 *
 *  CQ, kernel produces, userspace consumes
 *   K1 kernel writes the CQE, then publishes prod with smp_store_release().
 *   U1 userspace reads prod with a load-acquire; the CQEs below it are then
 *      complete (pairs with K1).
 *   U2 userspace reads the CQEs, then publishes cons with a store-release
 *      (or a compare-and-swap with release semantics).
 *   K2 kernel reads cons with smp_load_acquire() before it overwrites a slot;
 *      the reads of U2 are then finished (pairs with U2).
 *   Arming (no lost wake-up):
 *   U3 userspace stores the arm word, then issues a full barrier, then reads
 *      prod (its next poll).
 *   K3 kernel publishes prod (K1), then issues smp_mb(), then reads the arm
 *      word. With both full barriers, either the kernel sees the arm and
 *      raises the event, or the poll after arming sees the CQE.
 *
 *  Work queues, userspace produces, kernel consumes
 *   U4 userspace writes the WQE, then publishes prod with a store-release.
 *   K4 kernel reads prod with smp_load_acquire(), copies each WQE once into
 *      kernel memory, validates the copy, and publishes cons (WQEs taken)
 *      with smp_store_release(); it never reads a taken WQE's slot again.
 *      Taken is not free: the slot is still the work request's until its
 *      completion has been polled. A prod behind cons, or more than a ring
 *      ahead of done, is not honest: the kernel takes nothing.
 *   K5 when the kernel completes WQEs, in order, it writes the CQ index of
 *      each one's CQE into the slot's word of the cqe_idx array, then
 *      publishes done (WQEs completed) with smp_store_release(), both
 *      before it publishes those CQEs (K1): a consumer that has polled a
 *      completion finds its work request's slot completed.
 *   U5 userspace reads done with a load-acquire; a slot below it is free
 *      once its CQE has been polled: once cqe_idx of the slot no longer
 *      lies in [cons, prod) of the queue's CQ, read from the CQ's current
 *      ring (cons first; a sealed ring tells nothing). Slots are freed in
 *      order. So at most max_send_wr sends (max_recv_wr receives) are
 *      outstanding, completed but unpolled ones included, and a CQ sized
 *      for them never overruns, however eagerly the kernel takes WQEs; as
 *      mlx5 and rxe, which free a slot only when its completion is seen.
 *      Moving the QP to RESET drops every WQE (done = cons = prod) and
 *      frees every slot; libsrx then removes the QP's completions from
 *      its CQs, between cons and prod, where the kernel does not write.
 *   Doorbell (no lost flush): the kernel stores state, issues smp_mb() and
 *   reads prod; userspace publishes prod (U4), issues a full barrier and
 *   reads state. If it sees SRX_QP_STATE_ERR it rings the doorbell (a
 *   write() POST_SEND command with no work requests). If that fails, the
 *   WQEs from cons on are not known to be taken.
 *   Send doorbell of an RC QP (no lost wake-up; format 4), a Dekker pair
 *   on the SQ's prod and engine words, as io_uring's SQPOLL NEED_WAKEUP:
 *   K6 the kernel sets SRX_WQ_ENGINE_ACTIVE while its send engine will
 *      read prod again without a doorbell (work queued or running,
 *      packets outstanding, a timer pending). It clears it only when it
 *      finds nothing to take: it stores engine = 0, issues smp_mb(), and
 *      reads prod again (acquire); if prod moved it sets ACTIVE again and
 *      goes on. A QP in the error or reset state keeps it clear.
 *   U6 userspace publishes prod (U4), issues a full barrier, reads engine,
 *      and rings the doorbell only if ACTIVE is clear. Either the kernel's
 *      reload sees the new prod, or the poster sees ACTIVE clear and
 *      rings: no WQE is left unsent. A QP in error keeps ACTIVE clear, so
 *      the state rule above is folded in: a post to it rings and flushes.
 *  Shared receive queue (SRQ): its ring is an RQ's (struct srx_wq_ctrl,
 *  struct srx_recv_wqe slots, a cqe_idx array it does not use), consumed
 *  by every QP attached to it. Its WQEs complete out of order, on the
 *  recv CQs of several QPs, so U5 cannot free its slots:
 *   K7 the kernel takes a WQE (K4, under the SRQ's own lock) only when a
 *      message needs one, copying it into the taking QP's private entry;
 *      it then publishes cons and mirrors done = cons. A QP holds at most
 *      one taken, uncompleted SRQ WQE. A completion not yet polled holds
 *      no slot (as on rxe; mlx5 frees an SRQ slot when its CQE is
 *      polled), so the SRQ's size does not bound the recv CQs: a process
 *      that posts again before it polls must size them for that too.
 *   U7 a slot is free once cons (load-acquire) has passed it: the kernel
 *      never reads a taken slot again. A post to an SRQ never rings.
 *
 * The kernel never trusts a word userspace can write: it keeps its own copy
 * of every index it owns, reads each user-written word once with READ_ONCE()
 * and treats any impossible value as "this process only hurts itself".
 */
#ifndef SRX_ABI_USER_H
#define SRX_ABI_USER_H

#include <linux/types.h>

/*
 * ops.uverbs_abi_ver of an srx device; libsrx matches exactly this value,
 * and libibverbs refuses a pair that differs, naming both versions (with
 * IBV_SHOW_WARNINGS=1). It covers the command and response payloads below;
 * SRX_RING_FORMAT covers the shared-memory formats. Version 2 gave every
 * layout and response room to grow (comp_mask, reserved words); from now
 * on they grow without a new version, by these rules:
 *
 *  - Input. Every command rejects input it does not know with EOPNOTSUPP:
 *    a non-zero reserved word, an unknown bit of flags or comp_mask, and
 *    any non-zero byte after the structure it knows (a payload from a
 *    newer provider). A command without a payload takes none but zeros. A
 *    shorter payload (from an older provider) reads as zero-extended. A
 *    known field with a bad value is EINVAL. So a provider that asks an
 *    older kernel for a feature gets EOPNOTSUPP, never a silent "no".
 *  - Output. The kernel writes min(outlen, sizeof(response)): an older
 *    provider gets the part it knows; a buffer shorter than the response
 *    of version 2 is EINVAL. A newer provider zeroes its buffer, so a field
 *    an older kernel did not write reads as zero; comp_mask says which
 *    fields that zero would be ambiguous for were written.
 *  - Ring memory. A change that an older provider would misread changes
 *    SRX_RING_FORMAT, which GET_CONTEXT returns and libsrx checks.
 */
#define SRX_UVERBS_ABI_VERSION 2

/*
 * ops.driver_id of an srx device, and the driver id libsrx matches on.
 * Linux 6.1's enum rdma_driver_id ends at 19 (RDMA_DRIVER_ERDMA) and
 * rdma-core 44 knows 20 (RDMA_DRIVER_MANA); this private value ("SX") is far
 * above both so no in-tree provider binds an srx device and libsrx binds
 * nothing else.
 */
#define SRX_DRIVER_ID 0x5358

/*
 * Version of the ring and entry formats below. 3: work queues have done and
 * cqe_idx, and a slot is free when its completion has been polled (U5),
 * not when the kernel has taken its WQE. 4: the send queue has the engine
 * word (K6/U6), and an RC send rings the doorbell only when the engine is
 * idle.
 */
#define SRX_RING_FORMAT 4

/* Cache-line size every shared layout is padded to. */
#define SRX_CACHELINE 64

/* ------------------------------------------------------------------ */
/* Completion queue ring                                              */
/* ------------------------------------------------------------------ */

/*
 * The consumer word is 64 bits: the low half is the consumer index, the high
 * half is zero except while the kernel seals the ring to copy its CQEs into a
 * resized one. A sealed word makes every consumer's compare-and-swap fail, so
 * no CQE can be taken from the old ring once the kernel has counted it.
 * Userspace may seal it too (libsrx does while it removes a reset QP's
 * CQEs): outside a resize the kernel reads only the low half.
 */
#define SRX_CQ_CONS_SEALED 0x80000000u

/* Bits of the kernel-written status word. */
#define SRX_CQ_STATUS_ERROR 0x1u	/* overrun: the CQ is in error */

/*
 * Arm word, written by userspace: bit 0 asks for solicited (and unsuccessful)
 * completions only; bits 31..1 are an arm sequence number. The CQ is armed
 * while that number differs from the last one the kernel fired on, which the
 * kernel publishes in the fired word (same 31-bit space, not shifted).
 */
#define SRX_CQ_ARM_SOLICITED 0x1u
#define SRX_CQ_ARM_SEQ_SHIFT 1

/* Control block at the start of a CQ mapping (current layout). */
struct srx_cq_ctrl {
	/* Cache line 0: written by the kernel only. */
	__u32 prod;		/* CQEs published; store-release (K1) */
	__u32 fired;		/* arm sequence last fired on */
	__u32 status;		/* SRX_CQ_STATUS_* */
	__u32 dropped;		/* CQEs lost to overrun, saturating */
	__u8 reserved0[SRX_CACHELINE - 16];
	/* Cache line 1: written by consumers, read by the kernel. */
	__aligned_u64 cons;	/* low 32: consumer index; high 32: seal */
	__u8 reserved1[SRX_CACHELINE - 8];
	/* Cache line 2: written by userspace when it arms the CQ. */
	__u32 arm;		/* SRX_CQ_ARM_* */
	__u8 reserved2[SRX_CACHELINE - 4];
};

/*
 * Bits of srx_cqe.flags. The low four are the bits of ibv_wc.wc_flags
 * (IBV_WC_GRH, IBV_WC_WITH_IMM, IBV_WC_IP_CSUM_OK, IBV_WC_WITH_INV in
 * rdma-core's verbs.h), so a provider copies them unchanged; SOLICITED is
 * for the kernel's arm decision and is not reported.
 */
#define SRX_CQE_GRH		0x01	/* a GRH precedes the receive buffer */
#define SRX_CQE_WITH_IMM	0x02	/* ex holds immediate data, network order */
#define SRX_CQE_IP_CSUM_OK	0x04
#define SRX_CQE_WITH_INV	0x08	/* ex holds the invalidated rkey */
#define SRX_CQE_WC_FLAGS	0x0f
/*
 * Kernel CQs only: slid holds the VLAN id a datagram came in on (a RoCE
 * port has no LIDs). ib_cm answers a MAD from the GID of that VLAN
 * (ib_init_ah_attr_from_wc()); ibv_wc has no VLAN field, so a user CQ
 * never gets it.
 */
#define SRX_CQE_WITH_VLAN	0x10
#define SRX_CQE_SOLICITED	0x80	/* the sender asked for an event */

/*
 * One completion, written by the kernel: 32 bytes, two per cache line, and
 * everything struct ibv_wc carries for a RoCE device. Laid out so that a
 * provider builds a struct ibv_wc with four 8-byte loads, six 8-byte stores
 * and few shifts: byte_len+ex and qp_num+src_qp are adjacent here as they
 * are in ibv_wc, and slid, sl, dlid_path_bits are in ibv_wc's order (format
 * 2; format 1 had sl before slid).
 * Documentation/performance.md has the measurements that chose it over the
 * 48-byte struct ib_uverbs_wc, and where that choice costs.
 */
struct srx_cqe {
	__aligned_u64 wr_id;
	__u32 byte_len;
	__u32 ex;		/* immediate data or invalidated rkey, see flags */
	__u32 qp_num;
	__u32 src_qp;
	__u8 status;		/* enum ib_wc_status (same values as ibv_wc_status) */
	__u8 opcode;		/* enum ib_uverbs_wc_opcode (== enum ibv_wc_opcode) */
	__u8 flags;		/* SRX_CQE_* */
	__u8 reserved;
	__u16 slid;		/* slid, sl, dlid_path_bits: as in ibv_wc */
	__u8 sl;
	__u8 dlid_path_bits;
};

/* Where the pieces of a CQ ring are; returned by create and resize. */
struct srx_cq_layout {
	__aligned_u64 mmap_offset;	/* mmap() offset on the uverbs file */
	__aligned_u64 mmap_length;	/* bytes to map */
	__u32 entries;			/* power of two; also the CQ's capacity */
	__u32 cqe_size;			/* sizeof(struct srx_cqe) today */
	__u32 prod_offset;		/* __u32, kernel-written */
	__u32 fired_offset;		/* __u32, kernel-written */
	__u32 status_offset;		/* __u32, kernel-written */
	__u32 dropped_offset;		/* __u32, kernel-written */
	__u32 cons_offset;		/* __aligned_u64, consumer-written */
	__u32 arm_offset;		/* __u32, userspace-written */
	__u32 cqe_offset;		/* first struct srx_cqe */
	__u32 comp_mask;		/* none defined yet: 0 */
	__u32 reserved[2];		/* 0 */
};

/* ------------------------------------------------------------------ */
/* Work queue rings (send queue, receive queue)                       */
/* ------------------------------------------------------------------ */

/* Values of the state word; they are enum ib_qp_state's. */
#define SRX_QP_STATE_RESET	0
#define SRX_QP_STATE_INIT	1
#define SRX_QP_STATE_RTR	2
#define SRX_QP_STATE_RTS	3
#define SRX_QP_STATE_SQD	4
#define SRX_QP_STATE_SQE	5
#define SRX_QP_STATE_ERR	6

/* Control block at the start of a work queue mapping (current layout). */
struct srx_wq_ctrl {
	/* Cache line 0: written by userspace (the poster). */
	__u32 prod;		/* WQEs posted; store-release (U4) */
	__u8 reserved0[SRX_CACHELINE - 4];
	/* Cache line 1: written by the kernel only. */
	__u32 cons;		/* WQEs the kernel has taken; store-release (K4) */
	__u32 state;		/* SRX_QP_STATE_* of the owning QP */
	__u32 done;		/* WQEs the kernel has completed; store-release (K5) */
	__u32 engine;		/* SQ: SRX_WQ_ENGINE_* (K6); RQ: 0 */
	__u8 reserved1[SRX_CACHELINE - 16];
};

/*
 * Bit of the engine word: the send engine will read prod again without a
 * doorbell (K6/U6).
 */
#define SRX_WQ_ENGINE_ACTIVE	0x1u

struct srx_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * A send work request, written by userspace. The fixed part is one cache
 * line; num_sge struct srx_sge, or inline_len bytes of data, follow it.
 */
struct srx_send_wqe {
	__aligned_u64 wr_id;
	__u8 opcode;		/* enum ib_uverbs_wr_opcode (== enum ibv_wr_opcode) */
	__u8 num_sge;
	__u16 send_flags;	/* IB_SEND_* bits (== IBV_SEND_*) */
	__u32 ex;		/* immediate data (network order) or rkey to invalidate */
	__u32 inline_len;	/* bytes of inline data after the header */
	__u32 reserved0;
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		struct {
			__u32 ah;	/* address handle number */
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 reserved;
		} ud;
		/*
		 * IB_WR_REG_MR (0x20), which only the kernel posts to its
		 * own QPs' rings: a process's take refuses the opcode.
		 */
		struct {
			__u32 key;	/* the MR's index, the new key byte */
			__u32 access;	/* IB_ACCESS_* to grant */
		} reg;
		/*
		 * IB_WR_BIND_MW (8): ibv_bind_mw() of a type 1 window and
		 * IBV_WR_BIND_MW of a type 2 one. Length 0 unbinds a type 1
		 * window.
		 */
		struct {
			__aligned_u64 addr;	/* first byte, in the MR */
			__aligned_u64 length;
			__u32 mw_rkey;	/* the window (its index counts) */
			__u32 rkey;	/* its new key: same index, new byte */
			__u32 mr_lkey;	/* the MR to bind to */
			__u32 access;	/* IB_ACCESS_* the window grants */
		} bind;
	} wr;
	__aligned_u64 reserved1;
	/* struct srx_sge sge[num_sge] or inline data follows */
};

/* A receive work request, written by userspace; sge[num_sge] follows. */
struct srx_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

/* Where the pieces of a work queue ring are; returned by QP create. */
struct srx_wq_layout {
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_length;
	__u32 entries;			/* power of two */
	__u32 wqe_size;			/* stride between WQEs */
	__u32 prod_offset;		/* __u32, userspace-written */
	__u32 cons_offset;		/* __u32, kernel-written */
	__u32 state_offset;		/* __u32, kernel-written */
	__u32 wqe_offset;		/* first WQE */
	__u32 max_sge;			/* SGEs a WQE of this queue holds */
	__u32 max_inline;		/* inline bytes a send WQE holds */
	__u32 comp_mask;		/* none defined yet: 0 */
	__u32 done_offset;		/* __u32, kernel-written (K5) */
	__u32 cqe_idx_offset;		/* __u32[entries], kernel-written (K5) */
	__u32 engine_offset;		/* __u32, kernel-written (K6) */
};

/* ------------------------------------------------------------------ */
/* Command and response payloads                                      */
/* ------------------------------------------------------------------ */

/*
 * Commands without a payload of their own (GET_CONTEXT, QUERY_DEVICE,
 * ALLOC_PD, REG_MR, CREATE_QP, MODIFY_QP, CREATE_SRQ, MODIFY_SRQ) take
 * none: anything but zeros is EOPNOTSUPP, so a payload can be defined for
 * them later.
 */

struct srx_alloc_ucontext_resp {
	__u32 ring_format;		/* SRX_RING_FORMAT */
	__u32 cqe_size;			/* sizeof(struct srx_cqe) */
	__u32 max_cqe;
	__u32 comp_mask;		/* none defined yet: 0 */
};

/* Optional: a provider that sends nothing gets the defaults. */
struct srx_create_cq_cmd {
	__u32 flags;			/* none defined: non-zero is EOPNOTSUPP */
	__u32 reserved;			/* non-zero is EOPNOTSUPP */
};

struct srx_create_cq_resp {
	struct srx_cq_layout ring;
};

/*
 * Resize is a two-step exchange so that a process that cannot map the new
 * ring keeps the old one: PREPARE allocates the new ring and returns its
 * layout (the CQ is unchanged), COMMIT seals the old ring, moves the pending
 * CQEs into the new one and switches to it, ABORT drops a prepared ring.
 */
enum srx_resize_op {
	SRX_RESIZE_PREPARE = 1,
	SRX_RESIZE_COMMIT = 2,
	SRX_RESIZE_ABORT = 3,
};

struct srx_resize_cq_cmd {
	__u32 op;			/* enum srx_resize_op; required */
	__u32 reserved;			/* non-zero is EOPNOTSUPP */
};

struct srx_resize_cq_resp {
	struct srx_cq_layout ring;	/* the prepared ring, after PREPARE */
};

/* A QP created on an SRQ has no receive queue: its rq layout is all zeros. */
struct srx_create_qp_resp {
	struct srx_wq_layout sq;
	struct srx_wq_layout rq;
};

/*
 * Returned by SRQ create (no command payload). The ring is laid out as a
 * receive queue's, engine and cqe_idx included though an SRQ uses neither;
 * slots are freed by K7/U7, not U5. A new object, so no new ring format:
 * an older libsrx never creates one.
 */
struct srx_create_srq_resp {
	struct srx_wq_layout ring;
	__u32 comp_mask;		/* none defined yet: 0 */
	__u32 reserved[3];		/* 0 */
};

/*
 * Returned by AH create: the number a UD send WQE names the address handle
 * by (srx_send_wqe.wr.ud.ah). Numbers are per device and never 0; the
 * kernel looks one up when it takes the WQE, and a number that is not an
 * AH of the QP's PD completes the WQE with IBV_WC_LOC_QP_OP_ERR.
 */
struct srx_create_ah_resp {
	__u32 ah_num;
	__u32 reserved;			/* 0 */
};

#endif /* SRX_ABI_USER_H */
