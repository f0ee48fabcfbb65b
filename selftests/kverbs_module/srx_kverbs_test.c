// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srx_kverbs_test - what a kernel consumer of an srx device may post and
 * ask for agrees with what the device reports.
 *
 * selftests/kverbs_test.sh inserts it in the guest. As an ib_client it is
 * called for every registered device; on each srx device it creates a PD,
 * a CQ and an RC QP, and checks:
 *  - the QP takes remote atomic access (the IB CM sets it) and query_qp
 *    says it is granted exactly when atomic_cap is not IB_ATOMIC_NONE;
 *  - ib_post_send() takes a send and every opcode whose feature the device
 *    reports, and refuses every other one with -EINVAL and bad_wr at it;
 *  - IB_SEND_INLINE is taken on SEND and RDMA WRITE only;
 *  - kernel QPs go through the transport engine: two RC QPs connected
 *    to each other on the device exchange a 3000-byte SEND at path MTU
 *    1024 (three packets), and the bytes arrive;
 *  - a QP's completions still in its CQ go when it is reset or destroyed;
 *  - kernel UD: an AH created and destroyed with rdma_create_ah() and
 *    rdma_destroy_ah() under a spinlock (ib_cm does so: they must not
 *    sleep), a datagram between two UD QPs through it, received with
 *    IB_WC_GRH, the sender's QPN and the 40-byte GRH area counted, and
 *    ib_init_ah_attr_from_wc() reading an address back from it;
 *  - a kernel SRQ: its limit event, a QP taking receives from it, and
 *    ib_drain_qp() on that QP, which 6.12 ends on LAST_WQE_REACHED;
 *  - fast registration: REG_MR, LOCAL_INV and SEND_WITH_INV through work
 *    requests, and the errors around them (srx_kverbs_fastreg()).
 * Init fails (-EINVAL) if a check failed and -ENODEV without an srx
 * device, so insmod's status is the result; the log says which check.
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/srx-abi.h>

static int srx_kverbs_checked;
static int srx_kverbs_failed;

#define CHECK(cond, fmt, ...) do {					\
	if (!(cond)) {							\
		pr_err("srx_kverbs_test: %s: FAIL " fmt "\n",		\
		       dev_name(&dev->dev), ##__VA_ARGS__);		\
		srx_kverbs_failed++;					\
	}								\
} while (0)

union srx_kverbs_wr {
	struct ib_send_wr wr;
	struct ib_rdma_wr rdma;
	struct ib_atomic_wr atomic;
	struct ib_reg_wr reg;
	struct ib_ud_wr ud;
};

static void srx_kverbs_post(struct ib_device *dev, struct ib_qp *qp)
{
	const struct ib_device_attr *a = &dev->attrs;
	bool atomic = a->atomic_cap != IB_ATOMIC_NONE;
	bool masked = a->masked_atomic_cap != IB_ATOMIC_NONE;
	bool mw = a->device_cap_flags & IB_DEVICE_MEM_WINDOW;
	bool mem_mgt = a->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS;
	const struct {
		const char *name;
		enum ib_wr_opcode op;
		bool reported;
		bool postable;	/* needs nothing this test lacks */
	} ops[] = {
		{ "SEND", IB_WR_SEND, true, true },
		{ "ATOMIC_CMP_AND_SWP", IB_WR_ATOMIC_CMP_AND_SWP, atomic, true },
		{ "ATOMIC_FETCH_AND_ADD", IB_WR_ATOMIC_FETCH_AND_ADD, atomic, true },
		{ "MASKED_ATOMIC_CMP_AND_SWP", IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
		  masked, true },
		{ "MASKED_ATOMIC_FETCH_AND_ADD", IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
		  masked, true },
		{ "BIND_MW", IB_WR_BIND_MW, mw, false },
		{ "LOCAL_INV", IB_WR_LOCAL_INV, mem_mgt, false },
		{ "SEND_WITH_INV", IB_WR_SEND_WITH_INV, mem_mgt, false },
		{ "REG_MR", IB_WR_REG_MR, mem_mgt, false },
		/* iWARP only: never on a RoCE device */
		{ "RDMA_READ_WITH_INV", IB_WR_RDMA_READ_WITH_INV, false, true },
		{ "LSO (RC)", IB_WR_LSO, false, true },
		/*
		 * RDMA ATOMIC WRITE (15; IB_WR_ATOMIC_WRITE of 6.2 on): srx
		 * reports it for libsrx's ibv_wr_atomic_write(), and a kernel
		 * poster, whose ib_send_wr has nowhere to carry its 8
		 * bytes, gets -EINVAL.
		 */
		{ "ATOMIC_WRITE", (enum ib_wr_opcode)15, false, true },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		union srx_kverbs_wr w = {};
		const struct ib_send_wr *bad = NULL;
		int ret;

		if (ops[i].reported && !ops[i].postable)
			continue;
		w.wr.wr_id = i;
		w.wr.opcode = ops[i].op;
		ret = ib_post_send(qp, &w.wr, &bad);
		if (ops[i].reported) {
			CHECK(!ret, "%s: reported, post said %d", ops[i].name,
			      ret);
		} else {
			CHECK(ret == -EINVAL && bad == &w.wr,
			      "%s: not reported, post said %d, bad_wr %s",
			      ops[i].name, ret, bad == &w.wr ? "set" : "not set");
		}
	}
}

/*
 * IB_SEND_INLINE is for SEND and RDMA WRITE only: an RDMA READ or an
 * atomic that asks for it is -EINVAL with bad_wr at it, reported or not;
 * a SEND and an RDMA WRITE with it (and no data) are taken.
 */
static void srx_kverbs_post_inline(struct ib_device *dev, struct ib_qp *qp)
{
	const struct {
		const char *name;
		enum ib_wr_opcode op;
		bool ok;
	} ops[] = {
		{ "SEND", IB_WR_SEND, true },
		{ "RDMA_WRITE", IB_WR_RDMA_WRITE, true },
		{ "RDMA_READ", IB_WR_RDMA_READ, false },
		{ "ATOMIC_CMP_AND_SWP", IB_WR_ATOMIC_CMP_AND_SWP, false },
		{ "ATOMIC_FETCH_AND_ADD", IB_WR_ATOMIC_FETCH_AND_ADD, false },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		union srx_kverbs_wr w = {};
		const struct ib_send_wr *bad = NULL;
		int ret;

		w.wr.wr_id = 100 + i;
		w.wr.opcode = ops[i].op;
		w.wr.send_flags = IB_SEND_INLINE;
		ret = ib_post_send(qp, &w.wr, &bad);
		if (ops[i].ok) {
			CHECK(!ret, "%s with IB_SEND_INLINE: post said %d",
			      ops[i].name, ret);
		} else {
			CHECK(ret == -EINVAL && bad == &w.wr,
			      "%s with IB_SEND_INLINE: post said %d, bad_wr %s",
			      ops[i].name, ret,
			      bad == &w.wr ? "set" : "not set");
		}
	}
}

/* Wait up to 10 s for one completion on @cq. */
static int srx_kverbs_wait(struct ib_cq *cq, struct ib_wc *wc)
{
	int i, n;

	for (i = 0; i < 10000; i++) {
		n = ib_poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep_range(1000, 2000);
	}
	return 0;
}

#define SRX_KVERBS_QKEY	0x1234

/* Affiliated events seen by srx_kverbs_srq()'s SRQ and QP. */
static atomic_t srx_kverbs_limit_events = ATOMIC_INIT(0);
static atomic_t srx_kverbs_last_wqe_events = ATOMIC_INIT(0);

static void srx_kverbs_event(struct ib_event *ev, void *ctx)
{
	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED)
		atomic_inc(&srx_kverbs_limit_events);
	else if (ev->event == IB_EVENT_QP_LAST_WQE_REACHED)
		atomic_inc(&srx_kverbs_last_wqe_events);
}

/*
 * A kernel QP of @type on @pd in INIT on port 1: an RC QP granting remote
 * write, a UD QP with Q_Key SRX_KVERBS_QKEY; its receives from @srq if
 * not NULL, its events then counted by srx_kverbs_event().
 */
static struct ib_qp *srx_kverbs_qp(struct ib_pd *pd, struct ib_cq *cq,
				   enum ib_qp_type type, struct ib_srq *srq)
{
	struct ib_qp_init_attr init = {
		.qp_type = type, .sq_sig_type = IB_SIGNAL_ALL_WR,
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.srq = srq, .event_handler = srq ? srx_kverbs_event : NULL,
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT, .port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE,
		.qkey = SRX_KVERBS_QKEY,
	};
	int mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
		   (type == IB_QPT_UD ? IB_QP_QKEY : IB_QP_ACCESS_FLAGS);
	struct ib_qp *qp = ib_create_qp(pd, &init);

	if (IS_ERR(qp))
		return qp;
	if (ib_modify_qp(qp, &attr, mask)) {
		ib_destroy_qp(qp);
		return ERR_PTR(-EINVAL);
	}
	return qp;
}

static int srx_kverbs_connect(struct ib_qp *qp, u32 dqpn, union ib_gid *gid)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_RTR, .path_mtu = IB_MTU_1024,
		.dest_qp_num = dqpn, .rq_psn = 7, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
	};
	int ret;

	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, gid, 0, 0, 64, 0);
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = 7;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/* Teardown of what srx_kverbs_traffic() and srx_kverbs_srq() set up. */
static void srx_kverbs_free_qps(struct ib_qp *a, struct ib_qp *b)
{
	if (!IS_ERR_OR_NULL(a))
		ib_destroy_qp(a);
	if (!IS_ERR_OR_NULL(b))
		ib_destroy_qp(b);
}

static void srx_kverbs_free_cqs(struct ib_cq *ca, struct ib_cq *cb)
{
	if (!IS_ERR_OR_NULL(ca))
		ib_free_cq(ca);
	if (!IS_ERR_OR_NULL(cb))
		ib_free_cq(cb);
}

/*
 * Two kernel RC QPs on @dev, connected to each other through GID 0:
 * a SEND of 3000 bytes (3 packets at MTU 1024) from a to b, posted with
 * ib_post_send() (the engine's send_work runs the requester).
 */
static void srx_kverbs_traffic(struct ib_device *dev, struct ib_pd *pd)
{
	const size_t len = 3000;
	struct ib_qp *a = NULL, *b = NULL;
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *sbad;
	struct ib_cq *ca, *cb;
	struct ib_sge ssge, rsge;
	struct ib_send_wr swr = {};
	struct ib_recv_wr rwr = {};
	union ib_gid gid;
	struct ib_wc wc;
	u8 *src, *dst;
	u64 sdma, rdma;
	size_t i;
	int ret;

	ret = rdma_query_gid(dev, 1, 0, &gid);
	CHECK(!ret, "GID 0: %d", ret);
	if (ret)
		return;
	src = kmalloc(len, GFP_KERNEL);
	dst = kzalloc(len + 16, GFP_KERNEL);
	ca = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	cb = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	if (!src || !dst || IS_ERR(ca) || IS_ERR(cb)) {
		CHECK(0, "traffic setup");
		goto out_free;
	}
	a = srx_kverbs_qp(pd, ca, IB_QPT_RC, NULL);
	b = srx_kverbs_qp(pd, cb, IB_QPT_RC, NULL);
	if (IS_ERR(a) || IS_ERR(b)) {
		CHECK(0, "traffic QPs");
		goto out_qp;
	}
	ret = srx_kverbs_connect(a, b->qp_num, &gid);
	if (!ret)
		ret = srx_kverbs_connect(b, a->qp_num, &gid);
	CHECK(!ret, "connect: %d", ret);
	if (ret)
		goto out_qp;

	for (i = 0; i < len; i++)
		src[i] = (u8)(i * 13 + 1);
	sdma = ib_dma_map_single(dev, src, len, DMA_TO_DEVICE);
	rdma = ib_dma_map_single(dev, dst, len + 16, DMA_FROM_DEVICE);
	rsge = (struct ib_sge){ .addr = rdma, .length = len + 16,
				.lkey = pd->local_dma_lkey };
	rwr.wr_id = 2;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ret = ib_post_recv(b, &rwr, &rbad);
	CHECK(!ret, "post_recv: %d", ret);
	ssge = (struct ib_sge){ .addr = sdma, .length = len,
				.lkey = pd->local_dma_lkey };
	swr.wr_id = 1;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = IB_WR_SEND;
	swr.send_flags = IB_SEND_SIGNALED;
	if (!ret)
		ret = ib_post_send(a, &swr, &sbad);
	CHECK(!ret, "post_send: %d", ret);
	if (!ret) {
		CHECK(srx_kverbs_wait(ca, &wc) == 1 && wc.wr_id == 1 &&
		      wc.status == IB_WC_SUCCESS, "send completion: status %d",
		      wc.status);
		memset(&wc, 0, sizeof(wc));
		CHECK(srx_kverbs_wait(cb, &wc) == 1 && wc.wr_id == 2 &&
		      wc.status == IB_WC_SUCCESS && wc.byte_len == len &&
		      wc.opcode == IB_WC_RECV,
		      "receive completion: status %d, %u bytes", wc.status,
		      wc.byte_len);
	}
	ib_dma_unmap_single(dev, sdma, len, DMA_TO_DEVICE);
	ib_dma_unmap_single(dev, rdma, len + 16, DMA_FROM_DEVICE);
	CHECK(!memcmp(src, dst, len) && !dst[len], "received bytes differ");
out_qp:
	srx_kverbs_free_qps(a, b);
out_free:
	srx_kverbs_free_cqs(ca, cb);
	kfree(src);
	kfree(dst);
}

/* Wait up to 5 s for @count to reach @want; what it reached. */
static int srx_kverbs_wait_events(atomic_t *count, int want)
{
	int i;

	for (i = 0; i < 500 && atomic_read(count) < want; i++)
		usleep_range(10000, 11000);
	return atomic_read(count);
}

#define SRX_KVERBS_SRQ_LEN	3000

/*
 * A kernel SRQ (ib_create_srq(), what nvmet-rdma makes by default): an RC
 * QP b takes its receives from it. The SRQ's limit, armed at 2 with three
 * WQEs posted, fires once when two SENDs from a have taken two, and reads
 * 0 after; the third SEND takes the third WQE without another event.
 * ib_drain_qp(b) returns (6.12's waits up to 60 s for LAST_WQE_REACHED,
 * 6.1's does not wait for it), and b's handler sees LAST_WQE_REACHED once.
 */
static void srx_kverbs_srq(struct ib_device *dev, struct ib_pd *pd)
{
	const size_t len = SRX_KVERBS_SRQ_LEN, slot = len + 16;
	struct ib_srq_init_attr sinit = {
		.event_handler = srx_kverbs_event,
		.attr = { .max_wr = 8, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	struct ib_srq_attr sattr = {};
	struct ib_qp *a = NULL, *b = NULL;
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *sbad;
	struct ib_recv_wr rwr[3] = {};
	struct ib_sge rsge[3];
	struct ib_cq *ca, *cb;
	struct ib_srq *srq;
	struct ib_send_wr swr = {};
	struct ib_sge ssge;
	union ib_gid gid;
	struct ib_wc wc;
	u64 sdma = 0, rdma = 0;
	unsigned long start;
	u8 *src, *dst;
	size_t k;
	int i, ret;

	atomic_set(&srx_kverbs_limit_events, 0);
	atomic_set(&srx_kverbs_last_wqe_events, 0);
	ret = rdma_query_gid(dev, 1, 0, &gid);
	CHECK(!ret, "srq: GID 0: %d", ret);
	if (ret)
		return;

	sinit.attr.max_wr = 0;
	srq = ib_create_srq(pd, &sinit);
	CHECK(PTR_ERR(srq) == -EINVAL, "srq: max_wr 0: %d",
	      PTR_ERR_OR_ZERO(srq));
	if (!IS_ERR(srq))
		ib_destroy_srq(srq);
	sinit.attr.max_wr = 8;
	srq = ib_create_srq(pd, &sinit);
	CHECK(!IS_ERR(srq), "srq: ib_create_srq: %d", PTR_ERR_OR_ZERO(srq));
	if (IS_ERR(srq))
		return;
	CHECK(sinit.attr.max_wr >= 8 && sinit.attr.max_sge >= 1,
	      "srq: granted %u WQEs of %u SGEs", sinit.attr.max_wr,
	      sinit.attr.max_sge);
	ret = ib_query_srq(srq, &sattr);
	CHECK(!ret && sattr.max_wr == sinit.attr.max_wr && !sattr.srq_limit,
	      "srq: query: %d, max_wr %u, limit %u", ret, sattr.max_wr,
	      sattr.srq_limit);

	src = kmalloc(len, GFP_KERNEL);
	dst = kzalloc(3 * slot, GFP_KERNEL);
	ca = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	cb = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	if (!src || !dst || IS_ERR(ca) || IS_ERR(cb)) {
		CHECK(0, "srq: setup");
		goto out_free;
	}
	a = srx_kverbs_qp(pd, ca, IB_QPT_RC, NULL);
	b = srx_kverbs_qp(pd, cb, IB_QPT_RC, srq);
	if (IS_ERR(a) || IS_ERR(b)) {
		CHECK(0, "srq: QPs: %d %d", PTR_ERR_OR_ZERO(a),
		      PTR_ERR_OR_ZERO(b));
		goto out_qp;
	}
	ret = srx_kverbs_connect(a, b->qp_num, &gid) ?:
	      srx_kverbs_connect(b, a->qp_num, &gid);
	CHECK(!ret, "srq: connect: %d", ret);
	if (ret)
		goto out_qp;
	for (k = 0; k < len; k++)
		src[k] = (u8)(k * 7 + 3);
	sdma = ib_dma_map_single(dev, src, len, DMA_TO_DEVICE);
	rdma = ib_dma_map_single(dev, dst, 3 * slot, DMA_FROM_DEVICE);
	for (i = 0; i < 3; i++) {
		rsge[i] = (struct ib_sge){ .addr = rdma + i * slot,
					   .length = slot,
					   .lkey = pd->local_dma_lkey };
		rwr[i].wr_id = 10 + i;
		rwr[i].sg_list = &rsge[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i < 2 ? &rwr[i + 1] : NULL;
	}
	ret = ib_post_srq_recv(srq, rwr, &rbad);
	CHECK(!ret, "srq: post_srq_recv: %d", ret);
	sattr.srq_limit = 2;
	if (!ret)
		ret = ib_modify_srq(srq, &sattr, IB_SRQ_LIMIT);
	CHECK(!ret, "srq: limit 2: %d", ret);
	if (ret)
		goto out_unmap;

	ssge = (struct ib_sge){ .addr = sdma, .length = len,
				.lkey = pd->local_dma_lkey };
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = IB_WR_SEND;
	swr.send_flags = IB_SEND_SIGNALED;
	for (i = 0; i < 3; i++) {
		swr.wr_id = 1 + i;
		ret = ib_post_send(a, &swr, &sbad);
		CHECK(!ret, "srq: post_send %d: %d", i, ret);
		if (ret)
			break;
		memset(&wc, 0, sizeof(wc));
		CHECK(srx_kverbs_wait(ca, &wc) == 1 && wc.wr_id == 1 + i &&
		      wc.status == IB_WC_SUCCESS,
		      "srq: send %d: status %d", i, wc.status);
		memset(&wc, 0, sizeof(wc));
		CHECK(srx_kverbs_wait(cb, &wc) == 1 && wc.wr_id == 10 + i &&
		      wc.status == IB_WC_SUCCESS && wc.qp == b &&
		      wc.byte_len == len && wc.opcode == IB_WC_RECV,
		      "srq: receive %d: wr_id %llu, status %d, %u bytes", i,
		      wc.wr_id, wc.status, wc.byte_len);
		if (i != 1)
			continue;
		/* One WQE left, fewer than 2: the limit fires, once. */
		CHECK(srx_kverbs_wait_events(&srx_kverbs_limit_events, 1) == 1,
		      "srq: %d SRQ_LIMIT_REACHED events",
		      atomic_read(&srx_kverbs_limit_events));
		ret = ib_query_srq(srq, &sattr);
		CHECK(!ret && !sattr.srq_limit,
		      "srq: query after the event: %d, limit %u", ret,
		      sattr.srq_limit);
	}
	CHECK(atomic_read(&srx_kverbs_limit_events) == 1,
	      "srq: %d SRQ_LIMIT_REACHED events after the third receive",
	      atomic_read(&srx_kverbs_limit_events));
	ib_dma_unmap_single(dev, sdma, len, DMA_TO_DEVICE);
	ib_dma_unmap_single(dev, rdma, 3 * slot, DMA_FROM_DEVICE);
	for (i = 0; i < 3; i++)
		CHECK(!memcmp(src, dst + i * slot, len) && !dst[i * slot + len],
		      "srq: receive %d's bytes differ", i);

	/* b's CQ is empty: the drain's own completions are all it finds. */
	start = jiffies;
	ib_drain_qp(b);
	CHECK(time_before(jiffies, start + 30 * HZ),
	      "srq: ib_drain_qp() took %u ms",
	      jiffies_to_msecs(jiffies - start));
	CHECK(srx_kverbs_wait_events(&srx_kverbs_last_wqe_events, 1) == 1,
	      "srq: %d LAST_WQE_REACHED events",
	      atomic_read(&srx_kverbs_last_wqe_events));
	goto out_qp;

out_unmap:
	ib_dma_unmap_single(dev, sdma, len, DMA_TO_DEVICE);
	ib_dma_unmap_single(dev, rdma, 3 * slot, DMA_FROM_DEVICE);
out_qp:
	srx_kverbs_free_qps(a, b);
out_free:
	srx_kverbs_free_cqs(ca, cb);
	kfree(src);
	kfree(dst);
	ib_destroy_srq(srq);
}

#define SRX_KVERBS_GRH	40

/* A kernel UD QP in RTS. */
static struct ib_qp *srx_kverbs_ud_qp(struct ib_pd *pd, struct ib_cq *cq)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RTR };
	struct ib_qp *qp = srx_kverbs_qp(pd, cq, IB_QPT_UD, NULL);

	if (IS_ERR(qp))
		return qp;
	if (ib_modify_qp(qp, &attr, IB_QP_STATE))
		goto err;
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 3;
	if (ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN))
		goto err;
	return qp;
err:
	ib_destroy_qp(qp);
	return ERR_PTR(-EINVAL);
}

static DEFINE_SPINLOCK(srx_kverbs_lock);

/* Two kernel UD QPs on @dev: a datagram of @len bytes from a to b. */
static noinline void srx_kverbs_ud(struct ib_device *dev, struct ib_pd *pd)
{
	const size_t len = 700;
	struct ib_qp *a = NULL, *b = NULL;
	struct rdma_ah_attr *ah_attr;
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *sbad;
	struct ib_cq *ca = NULL, *cb = NULL;
	struct ib_sge ssge, rsge;
	struct ib_ud_wr swr = {};
	struct ib_recv_wr rwr = {};
	struct ib_ah *ah = NULL;
	unsigned long flags;
	union ib_gid gid;
	struct ib_wc wc;
	u8 *src, *dst;
	u64 sdma, rdma;
	size_t i;
	int ret;

	ret = rdma_query_gid(dev, 1, 0, &gid);
	CHECK(!ret, "UD: GID 0: %d", ret);
	if (ret)
		return;
	src = kmalloc(len, GFP_KERNEL);
	dst = kzalloc(SRX_KVERBS_GRH + len, GFP_KERNEL);
	ah_attr = kzalloc(sizeof(*ah_attr), GFP_KERNEL);
	ca = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	cb = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	if (!src || !dst || !ah_attr || IS_ERR(ca) || IS_ERR(cb)) {
		CHECK(0, "UD setup");
		goto out_free;
	}
	a = srx_kverbs_ud_qp(pd, ca);
	b = srx_kverbs_ud_qp(pd, cb);
	if (IS_ERR(a) || IS_ERR(b)) {
		CHECK(0, "UD QPs");
		goto out_qp;
	}

	ah_attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah_attr, 1);
	rdma_ah_set_grh(ah_attr, &gid, 0, 0, 64, 0);
	spin_lock_irqsave(&srx_kverbs_lock, flags);
	ah = rdma_create_ah(pd, ah_attr, 0);
	spin_unlock_irqrestore(&srx_kverbs_lock, flags);
	if (IS_ERR(ah)) {
		CHECK(0, "rdma_create_ah under a spinlock: %ld", PTR_ERR(ah));
		ah = NULL;
		goto out_qp;
	}

	for (i = 0; i < len; i++)
		src[i] = (u8)(i * 7 + 3);
	sdma = ib_dma_map_single(dev, src, len, DMA_TO_DEVICE);
	rdma = ib_dma_map_single(dev, dst, SRX_KVERBS_GRH + len,
				 DMA_FROM_DEVICE);
	rsge = (struct ib_sge){ .addr = rdma, .length = SRX_KVERBS_GRH + len,
				.lkey = pd->local_dma_lkey };
	rwr.wr_id = 4;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ret = ib_post_recv(b, &rwr, &rbad);
	CHECK(!ret, "UD post_recv: %d", ret);
	ssge = (struct ib_sge){ .addr = sdma, .length = len,
				.lkey = pd->local_dma_lkey };
	swr.wr.wr_id = 3;
	swr.wr.sg_list = &ssge;
	swr.wr.num_sge = 1;
	swr.wr.opcode = IB_WR_SEND;
	swr.wr.send_flags = IB_SEND_SIGNALED;
	swr.ah = ah;
	swr.remote_qpn = b->qp_num;
	swr.remote_qkey = SRX_KVERBS_QKEY;
	if (!ret)
		ret = ib_post_send(a, &swr.wr, &sbad);
	CHECK(!ret, "UD post_send: %d", ret);
	if (!ret) {
		CHECK(srx_kverbs_wait(ca, &wc) == 1 && wc.wr_id == 3 &&
		      wc.status == IB_WC_SUCCESS, "UD send completion: status %d",
		      wc.status);
		memset(&wc, 0, sizeof(wc));
		ret = srx_kverbs_wait(cb, &wc) == 1 ? 0 : -ETIMEDOUT;
		CHECK(!ret && wc.wr_id == 4 && wc.status == IB_WC_SUCCESS &&
		      wc.opcode == IB_WC_RECV &&
		      wc.byte_len == SRX_KVERBS_GRH + len &&
		      (wc.wc_flags & IB_WC_GRH) && wc.src_qp == a->qp_num,
		      "UD receive: status %d, %u bytes, flags %#x, src_qp %u",
		      wc.status, wc.byte_len, wc.wc_flags, wc.src_qp);
	}
	ib_dma_unmap_single(dev, sdma, len, DMA_TO_DEVICE);
	ib_dma_unmap_single(dev, rdma, SRX_KVERBS_GRH + len, DMA_FROM_DEVICE);
	CHECK(!memcmp(src, dst + SRX_KVERBS_GRH, len), "UD bytes differ");
	if (!ret && wc.status == IB_WC_SUCCESS) {
		memset(ah_attr, 0, sizeof(*ah_attr));
		ret = ib_init_ah_attr_from_wc(dev, 1, &wc,
					      (const struct ib_grh *)dst,
					      ah_attr);
		CHECK(!ret && !memcmp(&ah_attr->grh.dgid, &gid, sizeof(gid)),
		      "ib_init_ah_attr_from_wc: %d", ret);
		if (!ret)
			rdma_destroy_ah_attr(ah_attr);
	}
out_qp:
	if (ah) {
		/* The core WARNs if the driver's destroy fails. */
		spin_lock_irqsave(&srx_kverbs_lock, flags);
		rdma_destroy_ah(ah, 0);
		spin_unlock_irqrestore(&srx_kverbs_lock, flags);
	}
	if (!IS_ERR_OR_NULL(a))
		ib_destroy_qp(a);
	if (!IS_ERR_OR_NULL(b))
		ib_destroy_qp(b);
out_free:
	if (!IS_ERR_OR_NULL(ca))
		ib_free_cq(ca);
	if (!IS_ERR_OR_NULL(cb))
		ib_free_cq(cb);
	kfree(ah_attr);
	kfree(src);
	kfree(dst);
}

static int srx_kverbs_move(struct ib_qp *qp, enum ib_qp_state state)
{
	struct ib_qp_attr attr = { .qp_state = state, .port_num = 1 };
	int mask = IB_QP_STATE;

	if (state == IB_QPS_INIT)
		mask |= IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS;
	return ib_modify_qp(qp, &attr, mask);
}

static int srx_kverbs_recv(struct ib_qp *qp, u64 wr_id)
{
	struct ib_recv_wr wr = { .wr_id = wr_id };
	const struct ib_recv_wr *bad;

	return ib_post_recv(qp, &wr, &bad);
}

/*
 * A kernel QP's completions still in its CQ go when it is reset or
 * destroyed: ib_poll_cq() then never returns a QP that is gone, nor a
 * completion from before the reset. Receives posted in INIT and flushed
 * by the move to ERR, which completes them before ib_modify_qp() returns:
 * a: 1 2, b: 3; a reset; b: 4 after its own reset; b destroyed.
 */
static void srx_kverbs_clean(struct ib_device *dev, struct ib_pd *pd)
{
	struct ib_qp *a = NULL, *b = NULL;
	struct ib_wc wc[4];
	struct ib_cq *cq;
	int n, ret;

	cq = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	if (IS_ERR(cq)) {
		CHECK(0, "clean: CQ: %ld", PTR_ERR(cq));
		return;
	}
	a = srx_kverbs_qp(pd, cq, IB_QPT_RC, NULL);
	b = srx_kverbs_qp(pd, cq, IB_QPT_RC, NULL);
	if (IS_ERR(a) || IS_ERR(b)) {
		CHECK(0, "clean: QPs");
		goto out;
	}
	ret = srx_kverbs_recv(a, 1) ?: srx_kverbs_recv(a, 2) ?:
	      srx_kverbs_recv(b, 3) ?: srx_kverbs_move(a, IB_QPS_ERR) ?:
	      srx_kverbs_move(b, IB_QPS_ERR) ?: srx_kverbs_move(a, IB_QPS_RESET);
	CHECK(!ret, "clean: setup: %d", ret);
	if (ret)
		goto out;
	n = ib_poll_cq(cq, 4, wc);
	CHECK(n == 1 && wc[0].wr_id == 3 && wc[0].qp == b &&
	      wc[0].status == IB_WC_WR_FLUSH_ERR,
	      "clean: after a's reset: %d completions, first wr_id %llu",
	      n, n > 0 ? wc[0].wr_id : 0);

	ret = srx_kverbs_move(b, IB_QPS_RESET) ?: srx_kverbs_move(b, IB_QPS_INIT) ?:
	      srx_kverbs_recv(b, 4) ?: srx_kverbs_move(b, IB_QPS_ERR);
	CHECK(!ret, "clean: b again: %d", ret);
	if (!ret) {
		n = ib_poll_cq(cq, 4, wc);
		CHECK(n == 1 && wc[0].wr_id == 4 && wc[0].qp == b,
		      "clean: b after its reset: %d completions", n);
		ret = srx_kverbs_move(b, IB_QPS_RESET) ?:
		      srx_kverbs_move(b, IB_QPS_INIT) ?: srx_kverbs_recv(b, 5) ?:
		      srx_kverbs_move(b, IB_QPS_ERR);
		CHECK(!ret, "clean: b a third time: %d", ret);
	}
	ib_destroy_qp(b);
	b = NULL;
	n = ib_poll_cq(cq, 4, wc);
	CHECK(n == 0, "clean: %d completions of a destroyed QP", n);
out:
	if (!IS_ERR_OR_NULL(a))
		ib_destroy_qp(a);
	if (!IS_ERR_OR_NULL(b))
		ib_destroy_qp(b);
	ib_free_cq(cq);
}

/* Post @wr on @qp and wait for its completion on @cq, into @wc. */
static int srx_kverbs_post_wait(struct ib_qp *qp, struct ib_cq *cq,
				const struct ib_send_wr *wr, struct ib_wc *wc)
{
	const struct ib_send_wr *bad;
	int ret;

	memset(wc, 0, sizeof(*wc));
	ret = ib_post_send(qp, wr, &bad);
	if (ret)
		return ret;
	return srx_kverbs_wait(cq, wc) == 1 ? 0 : -ETIMEDOUT;
}

/* Register @mr under a new key byte from @qp, granting @access. */
static int srx_kverbs_reg(struct ib_qp *qp, struct ib_cq *cq,
			  struct ib_mr *mr, int access, struct ib_wc *wc)
{
	struct ib_reg_wr reg = {
		.wr = { .opcode = IB_WR_REG_MR, .wr_id = 10 },
		.mr = mr, .access = access,
	};

	ib_update_fast_reg_key(mr, (u8)(mr->rkey + 1));
	reg.key = mr->rkey;
	return srx_kverbs_post_wait(qp, cq, &reg.wr, wc);
}

/* An RDMA WRITE of @len bytes at @sdma from @qp to @rkey at @va. */
static int srx_kverbs_write(struct ib_qp *qp, struct ib_cq *cq, u64 sdma,
			    u32 len, u32 lkey, u64 va, u32 rkey,
			    struct ib_wc *wc)
{
	struct ib_sge sge = { .addr = sdma, .length = len, .lkey = lkey };
	struct ib_rdma_wr w = {
		.wr = { .opcode = IB_WR_RDMA_WRITE, .wr_id = 11,
			.sg_list = &sge, .num_sge = 1 },
		.remote_addr = va, .rkey = rkey,
	};

	return srx_kverbs_post_wait(qp, cq, &w.wr, wc);
}

/*
 * Fast registration through work requests: an MR of IB_MR_TYPE_MEM_REG
 * over two pages that are not adjacent (the first entered 100 bytes in),
 * mapped with ib_map_mr_sg(), registered with IB_WR_REG_MR on QP b, and
 * written by QP a through its rkey: the bytes land in both pages. Then
 * LOCAL_INV, a registration under the next key, a SEND with Invalidate
 * from a (b's receive says IB_WC_WITH_INVALIDATE and the rkey), and a
 * WRITE through the invalidated rkey: REM_ACCESS_ERR. Then, on new QPs:
 * a registration mapped over (ib_map_mr_sg() of a registered MR) no
 * longer lets its key write, and REG_MR of an MR already valid is
 * IB_WC_LOC_QP_OP_ERR, as rxe's (rxe_mr.c, rxe_reg_fast_mr()). And what
 * is refused
 * at once: a type srx lacks, a page list beyond max_fast_reg_page_list_len,
 * a REG_MR whose key names another MR.
 */
static void srx_kverbs_fastreg(struct ib_device *dev, struct ib_pd *pd)
{
	const u32 len0 = PAGE_SIZE - 100, len1 = 1000, len = len0 + len1;
	const int access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	struct page *pg[2] = {};
	struct ib_qp *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
	struct ib_cq *ca = NULL, *cb = NULL;
	struct scatterlist sg[2];
	const struct ib_send_wr *sbad;
	const struct ib_recv_wr *rbad;
	struct ib_mr *mr, *bad_mr;
	struct ib_reg_wr reg = {};
	struct ib_sge ssge, rsge;
	struct ib_send_wr swr = {};
	struct ib_recv_wr rwr = {};
	bool mapped = false;
	u64 sdma = 0, rdma = 0;
	u32 old_rkey, i;
	union ib_gid gid;
	struct ib_wc wc;
	u8 *src, *dst, *p0, *p1;
	int ret, n;

	bad_mr = ib_alloc_mr(pd, IB_MR_TYPE_SG_GAPS, 4);
	CHECK(IS_ERR(bad_mr), "fastreg: an SG_GAPS MR was allocated");
	if (!IS_ERR(bad_mr))
		ib_dereg_mr(bad_mr);
	bad_mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG,
			     dev->attrs.max_fast_reg_page_list_len + 1);
	CHECK(IS_ERR(bad_mr), "fastreg: a page list beyond %u was allocated",
	      dev->attrs.max_fast_reg_page_list_len);
	if (!IS_ERR(bad_mr))
		ib_dereg_mr(bad_mr);

	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 4);
	CHECK(!IS_ERR(mr), "fastreg: ib_alloc_mr: %ld", PTR_ERR(mr));
	if (IS_ERR(mr))
		return;
	src = kmalloc(len, GFP_KERNEL);
	dst = kzalloc(64, GFP_KERNEL);
	pg[0] = alloc_page(GFP_KERNEL | __GFP_ZERO);
	pg[1] = alloc_page(GFP_KERNEL | __GFP_ZERO);
	ca = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	cb = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	if (!src || !dst || !pg[0] || !pg[1] || IS_ERR(ca) || IS_ERR(cb)) {
		CHECK(0, "fastreg: setup");
		goto out_free;
	}
	ret = rdma_query_gid(dev, 1, 0, &gid);
	a = srx_kverbs_qp(pd, ca, IB_QPT_RC, NULL);
	b = srx_kverbs_qp(pd, cb, IB_QPT_RC, NULL);
	if (ret || IS_ERR(a) || IS_ERR(b)) {
		CHECK(0, "fastreg: QPs (GID %d)", ret);
		goto out_qp;
	}
	ret = srx_kverbs_connect(a, b->qp_num, &gid) ?:
	      srx_kverbs_connect(b, a->qp_num, &gid);
	CHECK(!ret, "fastreg: connect: %d", ret);
	if (ret)
		goto out_qp;

	sg_init_table(sg, 2);
	sg_set_page(&sg[0], pg[0], len0, 100);
	sg_set_page(&sg[1], pg[1], len1, 0);
	n = ib_dma_map_sg(dev, sg, 2, DMA_BIDIRECTIONAL);
	mapped = n == 2;
	CHECK(mapped, "fastreg: ib_dma_map_sg: %d", n);
	if (!mapped)
		goto out_qp;
	n = ib_map_mr_sg(mr, sg, 2, NULL, PAGE_SIZE);
	CHECK(n == 2 && mr->length == len, "fastreg: ib_map_mr_sg: %d, length %llu",
	      n, mr->length);
	if (n != 2)
		goto out_qp;

	for (i = 0; i < len; i++)
		src[i] = (u8)(i * 7 + 3);
	sdma = ib_dma_map_single(dev, src, len, DMA_TO_DEVICE);
	rdma = ib_dma_map_single(dev, dst, 64, DMA_FROM_DEVICE);

	/* A key of another index: refused by the post. */
	reg.wr.opcode = IB_WR_REG_MR;
	reg.mr = mr;
	reg.key = mr->rkey ^ 0x100;
	reg.access = access;
	ret = ib_post_send(b, &reg.wr, &sbad);
	CHECK(ret == -EINVAL, "fastreg: REG_MR of another index: %d", ret);

	ret = srx_kverbs_reg(b, cb, mr, access, &wc);
	CHECK(!ret && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_REG_MR,
	      "fastreg: REG_MR: %d, status %d, opcode %d", ret, wc.status,
	      wc.opcode);
	ret = srx_kverbs_write(a, ca, sdma, len, pd->local_dma_lkey, mr->iova,
			       mr->rkey, &wc);
	CHECK(!ret && wc.status == IB_WC_SUCCESS,
	      "fastreg: WRITE through the rkey: %d, status %d", ret, wc.status);
	p0 = page_address(pg[0]);
	p1 = page_address(pg[1]);
	CHECK(!memcmp(p0 + 100, src, len0) && !memcmp(p1, src + len0, len1) &&
	      !p0[99] && !p1[len1], "fastreg: the WRITE's bytes are not where the pages are");

	/* LOCAL_INV, and a registration under the next key. */
	swr.opcode = IB_WR_LOCAL_INV;
	swr.wr_id = 12;
	swr.ex.invalidate_rkey = mr->rkey;
	ret = srx_kverbs_post_wait(b, cb, &swr, &wc);
	CHECK(!ret && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_LOCAL_INV,
	      "fastreg: LOCAL_INV: %d, status %d, opcode %d", ret, wc.status,
	      wc.opcode);
	old_rkey = mr->rkey;
	ret = srx_kverbs_reg(b, cb, mr, access, &wc);
	CHECK(!ret && wc.status == IB_WC_SUCCESS && mr->rkey != old_rkey,
	      "fastreg: REG_MR again: %d, status %d", ret, wc.status);

	/* SEND with Invalidate of that key, from a to a receive of b's. */
	rsge = (struct ib_sge){ .addr = rdma, .length = 64,
				.lkey = pd->local_dma_lkey };
	rwr.wr_id = 13;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ret = ib_post_recv(b, &rwr, &rbad);
	CHECK(!ret, "fastreg: post_recv: %d", ret);
	ssge = (struct ib_sge){ .addr = sdma, .length = 64,
				.lkey = pd->local_dma_lkey };
	memset(&swr, 0, sizeof(swr));
	swr.opcode = IB_WR_SEND_WITH_INV;
	swr.wr_id = 14;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.ex.invalidate_rkey = mr->rkey;
	ret = srx_kverbs_post_wait(a, ca, &swr, &wc);
	CHECK(!ret && wc.status == IB_WC_SUCCESS,
	      "fastreg: SEND_WITH_INV: %d, status %d", ret, wc.status);
	memset(&wc, 0, sizeof(wc));
	CHECK(srx_kverbs_wait(cb, &wc) == 1 && wc.wr_id == 13 &&
	      wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_RECV &&
	      (wc.wc_flags & IB_WC_WITH_INVALIDATE) &&
	      wc.ex.invalidate_rkey == mr->rkey && wc.byte_len == 64,
	      "fastreg: the receive of SEND_WITH_INV: status %d, flags %#x, rkey %#x",
	      wc.status, wc.wc_flags, wc.ex.invalidate_rkey);

	/* The peer invalidated it: a WRITE through it is refused. */
	ret = srx_kverbs_write(a, ca, sdma, 64, pd->local_dma_lkey, mr->iova,
			       mr->rkey, &wc);
	CHECK(!ret && wc.status == IB_WC_REM_ACCESS_ERR,
	      "fastreg: WRITE after invalidation: %d, status %d", ret,
	      wc.status);

	/*
	 * That NAK put both in error. A new pair, c to d: d registers, the
	 * MR is mapped again (as iSER does before its LOCAL_INV), and the
	 * old key no longer writes. (Not one QP connected to itself: its
	 * own responder's NAK would flush its WRITE first.)
	 */
	c = srx_kverbs_qp(pd, ca, IB_QPT_RC, NULL);
	d = srx_kverbs_qp(pd, cb, IB_QPT_RC, NULL);
	ret = IS_ERR(c) || IS_ERR(d) ? -ENOMEM :
	      srx_kverbs_connect(c, d->qp_num, &gid) ?:
	      srx_kverbs_connect(d, c->qp_num, &gid);
	CHECK(!ret, "fastreg: QPs c and d: %d", ret);
	if (ret)
		goto out_qp;
	ret = srx_kverbs_reg(d, cb, mr, access, &wc);
	CHECK(!ret && wc.status == IB_WC_SUCCESS,
	      "fastreg: REG_MR after remote invalidation: %d, status %d", ret,
	      wc.status);
	n = ib_map_mr_sg(mr, sg, 2, NULL, PAGE_SIZE);
	CHECK(n == 2, "fastreg: ib_map_mr_sg of a registered MR: %d", n);
	ret = srx_kverbs_write(c, ca, sdma, 64, pd->local_dma_lkey, mr->iova,
			       mr->rkey, &wc);
	CHECK(!ret && wc.status == IB_WC_REM_ACCESS_ERR,
	      "fastreg: WRITE through a key mapped over: %d, status %d", ret,
	      wc.status);

	/*
	 * Registered twice without an invalidation between, from a QP
	 * connected to itself (a REG_MR sends nothing).
	 */
	e = srx_kverbs_qp(pd, cb, IB_QPT_RC, NULL);
	ret = IS_ERR(e) ? PTR_ERR(e) : srx_kverbs_connect(e, e->qp_num, &gid);
	CHECK(!ret, "fastreg: QP e: %d", ret);
	if (ret)
		goto out_qp;
	ret = srx_kverbs_reg(e, cb, mr, access, &wc);
	CHECK(!ret && wc.status == IB_WC_SUCCESS && wc.qp == e,
	      "fastreg: REG_MR after a mapping: %d, status %d", ret, wc.status);
	ret = srx_kverbs_reg(e, cb, mr, access, &wc);
	CHECK(!ret && wc.status == IB_WC_LOC_QP_OP_ERR && wc.qp == e,
	      "fastreg: REG_MR of a valid MR: %d, status %d", ret, wc.status);

out_qp:
	srx_kverbs_free_qps(a, b);
	srx_kverbs_free_qps(c, d);
	srx_kverbs_free_qps(e, NULL);
	if (sdma)
		ib_dma_unmap_single(dev, sdma, len, DMA_TO_DEVICE);
	if (rdma)
		ib_dma_unmap_single(dev, rdma, 64, DMA_FROM_DEVICE);
	if (mapped)
		ib_dma_unmap_sg(dev, sg, 2, DMA_BIDIRECTIONAL);
out_free:
	ib_dereg_mr(mr);
	srx_kverbs_free_cqs(ca, cb);
	if (pg[0])
		__free_page(pg[0]);
	if (pg[1])
		__free_page(pg[1]);
	kfree(src);
	kfree(dst);
}

static int srx_kverbs_add(struct ib_device *dev)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT, .port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ |
				   IB_ACCESS_REMOTE_ATOMIC,
	};
	bool atomic = dev->attrs.atomic_cap != IB_ATOMIC_NONE;
	struct ib_qp_init_attr qinit;
	struct ib_qp_attr qattr;
	struct ib_wc wc;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	int ret;

	if (dev->ops.driver_id != SRX_DRIVER_ID)
		return -EOPNOTSUPP;	/* not ours to test: no client data */
	srx_kverbs_checked++;

	pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(pd)) {
		CHECK(0, "ib_alloc_pd: %ld", PTR_ERR(pd));
		return 0;
	}
	cq = ib_alloc_cq(dev, NULL, 32, 0, IB_POLL_DIRECT);
	if (IS_ERR(cq)) {
		CHECK(0, "ib_alloc_cq: %ld", PTR_ERR(cq));
		goto err_pd;
	}
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ib_create_qp(pd, &init);
	if (IS_ERR(qp)) {
		CHECK(0, "ib_create_qp: %ld", PTR_ERR(qp));
		goto err_cq;
	}

	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
				      IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	CHECK(!ret, "INIT with remote atomic access: %d", ret);
	ret = ib_query_qp(qp, &qattr, IB_QP_ACCESS_FLAGS, &qinit);
	CHECK(!ret, "query_qp: %d", ret);
	CHECK(!ret && !!(qattr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC) ==
		      atomic,
	      "remote atomic granted %d, atomic_cap %d",
	      !!(qattr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC),
	      dev->attrs.atomic_cap);

	/* ERR takes posts (they complete as flushed) without an address. */
	attr.qp_state = IB_QPS_ERR;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE);
	CHECK(!ret, "to ERR: %d", ret);
	if (!ret) {
		srx_kverbs_post(dev, qp);
		srx_kverbs_post_inline(dev, qp);
	}

	ib_destroy_qp(qp);
	/* Its flushes, polled by nobody, went with it. */
	CHECK(ib_poll_cq(cq, 1, &wc) == 0, "a destroyed QP's completion polled");
	srx_kverbs_traffic(dev, pd);
	srx_kverbs_ud(dev, pd);
	srx_kverbs_clean(dev, pd);
	srx_kverbs_srq(dev, pd);
	if (dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS)
		srx_kverbs_fastreg(dev, pd);
err_cq:
	ib_free_cq(cq);
err_pd:
	ib_dealloc_pd(pd);
	return 0;
}

static void srx_kverbs_remove(struct ib_device *dev, void *data)
{
}

static struct ib_client srx_kverbs_client = {
	.name = "srx_kverbs_test",
	.add = srx_kverbs_add,
	.remove = srx_kverbs_remove,
};

static int __init srx_kverbs_test_init(void)
{
	int ret;

	/* add() runs for every registered device before this returns. */
	ret = ib_register_client(&srx_kverbs_client);
	if (ret)
		return ret;
	ib_unregister_client(&srx_kverbs_client);

	pr_info("srx_kverbs_test: %d srx device(s) checked, %d check(s) failed\n",
		srx_kverbs_checked, srx_kverbs_failed);
	if (!srx_kverbs_checked)
		return -ENODEV;
	return srx_kverbs_failed ? -EINVAL : 0;
}

static void __exit srx_kverbs_test_exit(void)
{
}

module_init(srx_kverbs_test_init);
module_exit(srx_kverbs_test_exit);

MODULE_DESCRIPTION("srx selftest: kernel verbs agree with the device attributes");
MODULE_LICENSE("Dual BSD/GPL");
