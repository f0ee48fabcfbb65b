// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srx_mraccess_test - memory-key access (kernel/mr.c) on a real kernel,
 * with real pinned user memory, before the transport engine calls it.
 *
 * srx.ko exports nothing, and nothing in it calls the data-path functions
 * yet, so this module compiles kernel/mr.c itself (the same source, not a
 * copy; its symbols stay private to this module; with mw.c, which
 * deregistration calls) and runs it on a device of its own: a zeroed
 * struct srx_device with its MR xarray and window lock, which is all
 * mr.c touches, and no DMA device, so ib_umem_get() takes the virt DMA
 * path exactly as for a registered srx device. selftests/mraccess_test.sh
 * inserts it; its init runs the checks from insmod's process, whose
 * address space provides the user memory (vm_mmap()).
 *
 * What is checked (each "ok N - ..." line in the kernel log):
 *  - keys: a lookup needs the whole key (key byte and index); PD, rights
 *    and bounds faults of srx_mr_acquire();
 *  - a user MR whose start is not page-aligned and whose iova is unrelated
 *    to its address: the page array's length and first offset, and copies
 *    in both directions at page edges land at the user addresses
 *    (compared through copy_from_user()/copy_to_user());
 *  - srx_sge_copy() over a list mixing the user MR, the DMA MR (a kernel
 *    buffer) and a zero-length SGE with a bad key: gather and scatter of
 *    every slice of a grid, LOC_LEN (SRX_ACC_LENGTH) and protection faults;
 *  - the same lookup and copy from a timer, in softirq;
 *  - deregistration: the key is gone at once, but dereg does not return,
 *    and the pages stay pinned (folio_maybe_dma_pinned()) and written
 *    through, while a reference is held; it returns, the pages unpinned,
 *    once the reference is dropped; every MR and index is freed at the end.
 * Init fails (-EINVAL) if a check failed, so insmod's status is the result.
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/timer.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "../../kernel/mr.c"
#include "../../kernel/mw.c"

/* What mr.c takes from device.c. */
u32 srx_device_max_mr(void)
{
	return SRX_MAX_MR;
}

u32 srx_device_max_pd(void)
{
	return SRX_MAX_PD;
}

static int t_n, t_failed;

static void t_result(bool ok, const char *what)
{
	t_n++;
	if (!ok)
		t_failed++;
	pr_info("srx_mraccess_test: %sok %d - %s\n", ok ? "" : "not ", t_n,
		what);
}

#define T(cond, what) t_result(!!(cond), what)

static struct srx_device *t_sdev;
static struct ib_pd t_pd, t_other_pd;

static struct srx_mr *t_reg_user(unsigned long start, u64 len, u64 iova,
				 int access)
{
	struct ib_mr *ibmr;

	ibmr = srx_reg_user_mr(&t_pd, start, len, iova, access, NULL);
	if (IS_ERR(ibmr)) {
		pr_info("srx_mraccess_test: reg_user_mr: %ld\n", PTR_ERR(ibmr));
		return NULL;
	}
	return to_srx_mr(ibmr);
}

/* The byte the user buffer holds at its offset @i before any write. */
static u8 t_pat(u64 i)
{
	return (u8)(i * 13 + (i >> 9));
}

/* Bytes [@off, @off + @len) of the user mapping, equal to @want? */
static bool t_user_equals(unsigned long uaddr, u64 off, const u8 *want,
			  u64 len, u8 *tmp)
{
	if (copy_from_user(tmp, (void __user *)(uaddr + off), len))
		return false;
	return !memcmp(tmp, want, len);
}

struct t_softirq {
	struct timer_list timer;
	struct completion done;
	u32 key;
	u64 iova;
	u8 buf[64];
	bool in_softirq;
	enum srx_acc ret;
};

static void t_softirq_fn(struct timer_list *t)
{
	struct t_softirq *s = from_timer(s, t, timer);
	struct srx_mr *mr;

	s->in_softirq = in_softirq() && !in_task();
	s->ret = srx_mr_acquire(t_sdev, s->key, &t_pd, IB_ACCESS_LOCAL_WRITE,
				s->iova, sizeof(s->buf), &mr);
	if (s->ret == SRX_ACC_OK) {
		srx_mr_copy(mr, s->iova, s->buf, sizeof(s->buf), SRX_FROM_MR);
		srx_mr_release(mr);
	}
	complete(&s->done);
}

struct t_dereg {
	struct srx_mr *mr;
	struct completion done;
};

static int t_dereg_fn(void *arg)
{
	struct t_dereg *d = arg;

	srx_dereg_mr(&d->mr->base_mr, NULL);
	complete(&d->done);
	return 0;
}

static void t_run(void)
{
	const int rw = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		       IB_ACCESS_REMOTE_READ;
	const u64 map_len = 6 * PAGE_SIZE, first = 123;
	const u64 len = 4 * PAGE_SIZE + 7, iova = 0xabc000001230ULL;
	u8 *src = NULL, *dst = NULL, *tmp = NULL, *kbuf = NULL;
	struct srx_mr *dma = NULL, *um = NULL, *ro = NULL, *mr;
	struct ib_mr *ibmr;
	struct srx_sge sge[4];
	unsigned long uaddr;
	struct t_softirq *s;
	struct t_dereg d;
	struct page *pg0;
	u64 i, total;
	bool ok;

	uaddr = vm_mmap(NULL, 0, map_len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, 0);
	src = vmalloc(map_len);
	dst = vmalloc(map_len);
	tmp = vmalloc(map_len);
	kbuf = kmalloc(3000, GFP_KERNEL);
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (IS_ERR_VALUE(uaddr) || !src || !dst || !tmp || !kbuf || !s) {
		T(0, "test memory allocated");
		goto out;
	}
	for (i = 0; i < map_len; i++)
		src[i] = t_pat(i);
	T(!copy_to_user((void __user *)uaddr, src, map_len),
	  "user buffer filled");

	/* Keys, PD and rights on the DMA MR. */
	ibmr = srx_get_dma_mr(&t_pd, IB_ACCESS_LOCAL_WRITE);
	T(!IS_ERR(ibmr), "DMA MR registered");
	if (IS_ERR(ibmr))
		goto out;
	dma = to_srx_mr(ibmr);
	mr = srx_mr_get(t_sdev, dma->key);
	T(mr == dma, "the DMA MR's key finds it");
	if (mr)
		srx_mr_put(mr);
	T(!srx_mr_get(t_sdev, dma->key ^ 0x01), "a wrong key byte finds nothing");
	T(!srx_mr_get(t_sdev, dma->key ^ 0x80), "another wrong key byte finds nothing");
	T(!srx_mr_get(t_sdev, dma->key + (1 << SRX_MR_KEY_SHIFT)),
	  "a key of an unused index finds nothing");
	T(!srx_mr_get(t_sdev, dma->key & 0xff), "index 0 finds nothing");
	T(srx_mr_acquire(t_sdev, dma->key, &t_other_pd, 0,
			 (uintptr_t)kbuf, 8, &mr) == SRX_ACC_PD,
	  "a QP of another PD gets SRX_ACC_PD");
	T(srx_mr_acquire(t_sdev, dma->key, &t_pd, IB_ACCESS_REMOTE_WRITE,
			 (uintptr_t)kbuf, 8, &mr) == SRX_ACC_ACCESS,
	  "a right the MR lacks gets SRX_ACC_ACCESS");
	T(refcount_read(&dma->refs) == 1, "failed lookups hold no reference");

	/* A user MR: unaligned start, iova unrelated to the address. */
	um = t_reg_user(uaddr + first, len, iova, rw);
	T(um, "user MR registered at a start 123 bytes into a page");
	if (!um)
		goto out;
	T(um->first_off == first, "first_off is the start's offset in its page");
	T(um->npages == 5, "the page array holds the 5 pages the range touches");
	for (i = 0, ok = true; i + 1 < um->npages; i++)
		ok &= um->pages[i] != um->pages[i + 1];
	T(ok, "the page array holds distinct pages");

	{
		const u64 offs[] = { 0, 1, PAGE_SIZE - first - 1,
				     PAGE_SIZE - first, 2 * PAGE_SIZE + 5,
				     len - 1 };
		const u64 lens[] = { 1, 2, PAGE_SIZE + 1, 3 * PAGE_SIZE };
		unsigned int o, l;
		bool rd = true, wr = true;

		for (o = 0; o < ARRAY_SIZE(offs); o++) {
			for (l = 0; l < ARRAY_SIZE(lens); l++) {
				u64 n = min(lens[l], len - offs[o]);

				if (srx_mr_acquire(t_sdev, um->key, &t_pd,
						   IB_ACCESS_LOCAL_WRITE,
						   iova + offs[o], n, &mr)) {
					rd = wr = false;
					continue;
				}
				memset(dst, 0, n);
				srx_mr_copy(mr, iova + offs[o], dst, n, SRX_FROM_MR);
				rd &= !memcmp(dst, src + first + offs[o], n);
				for (i = 0; i < n; i++)
					dst[i] = (u8)~(i + o * 7 + l);
				srx_mr_copy(mr, iova + offs[o], dst, n, SRX_TO_MR);
				memcpy(src + first + offs[o], dst, n);
				srx_mr_release(mr);
				wr &= t_user_equals(uaddr, 0, src, map_len, tmp);
			}
		}
		T(rd, "reads at page edges return the user bytes");
		T(wr, "writes at page edges land at the user addresses, nowhere else");
	}
	T(srx_mr_acquire(t_sdev, um->key, &t_pd, 0, iova + len - 1, 2, &mr) ==
	  SRX_ACC_BOUNDS, "one byte past the end gets SRX_ACC_BOUNDS");
	T(srx_mr_acquire(t_sdev, um->key, &t_pd, 0, iova - 1, 2, &mr) ==
	  SRX_ACC_BOUNDS, "one byte before the start gets SRX_ACC_BOUNDS");
	mr = NULL;
	T(srx_mr_acquire(t_sdev, um->key, &t_pd, 0, iova + len + 99, 0, &mr) ==
	  SRX_ACC_OK && mr == um, "a zero-length access anywhere passes bounds");
	if (mr)
		srx_mr_release(mr);

	/* A read-only user MR over the same memory. */
	ro = t_reg_user(uaddr + PAGE_SIZE, PAGE_SIZE, 0x1000, 0);
	T(ro, "read-only user MR registered");
	if (!ro)
		goto out;

	/*
	 * An SGE list: 1000 bytes of the user MR, a zero-length SGE whose key
	 * is garbage (never looked up), 3000 bytes of kernel buffer through
	 * the DMA MR, 500 more of the user MR across a page edge.
	 */
	for (i = 0; i < 3000; i++)
		kbuf[i] = (u8)(0xc0 + i);
	sge[0] = (struct srx_sge){ .addr = iova + 10, .length = 1000, .lkey = um->key };
	sge[1] = (struct srx_sge){ .addr = 0, .length = 0, .lkey = 0xdeadbeef };
	sge[2] = (struct srx_sge){ .addr = (uintptr_t)kbuf, .length = 3000, .lkey = dma->key };
	sge[3] = (struct srx_sge){ .addr = iova + PAGE_SIZE - first - 100,
				   .length = 500, .lkey = um->key };
	T(srx_sge_check(t_sdev, &t_pd, IB_ACCESS_LOCAL_WRITE, sge, 4, &total) ==
	  SRX_ACC_OK && total == 4500, "srx_sge_check: the list is good, 4500 bytes");
	{
		u8 *msg = tmp;	/* the message the list holds */
		const u64 cuts[] = { 0, 1, 999, 1000, 1001, 3999, 4000, 4001, 4499 };
		unsigned int c, m;
		bool gather = true, scatter = true;

		memcpy(msg, src + first + 10, 1000);
		memcpy(msg + 1000, kbuf, 3000);
		memcpy(msg + 4000, src + PAGE_SIZE - 100, 500);
		for (c = 0; c < ARRAY_SIZE(cuts); c++) {
			for (m = 0; m < ARRAY_SIZE(cuts); m++) {
				u64 off = cuts[c], n;

				if (cuts[m] < off)
					continue;
				n = cuts[m] - off + 1;
				memset(dst, 0, n);
				gather &= srx_sge_copy(t_sdev, &t_pd, 0, sge, 4, off,
						       dst, n, SRX_FROM_MR) == SRX_ACC_OK &&
					  !memcmp(dst, msg + off, n);
			}
		}
		T(gather, "srx_sge_copy gathers every slice of the message");

		/* Scatter a new message packet by packet (1024-byte MTU). */
		for (i = 0; i < 4500; i++)
			msg[i] = (u8)(i * 3 + 1);
		for (i = 0; i < 4500; i += 1024)
			scatter &= srx_sge_copy(t_sdev, &t_pd, IB_ACCESS_LOCAL_WRITE,
						sge, 4, i, msg + i, min_t(u64, 1024, 4500 - i),
						SRX_TO_MR) == SRX_ACC_OK;
		memcpy(src + first + 10, msg, 1000);
		memcpy(src + PAGE_SIZE - 100, msg + 4000, 500);
		T(scatter && !memcmp(kbuf, msg + 1000, 3000) &&
		  t_user_equals(uaddr, 0, src, map_len, dst),
		  "srx_sge_copy scatters packets to the user and kernel memory");
	}
	T(srx_sge_copy(t_sdev, &t_pd, 0, sge, 4, 4000, dst, 501, SRX_FROM_MR) ==
	  SRX_ACC_LENGTH, "a slice past the list's end gets SRX_ACC_LENGTH");
	T(srx_sge_copy(t_sdev, &t_pd, 0, sge, 4, U64_MAX, dst, 2, SRX_FROM_MR) ==
	  SRX_ACC_LENGTH, "an offset + length that wraps gets SRX_ACC_LENGTH");
	sge[3].lkey ^= 0x5a;
	T(srx_sge_copy(t_sdev, &t_pd, 0, sge, 4, 0, dst, 4500, SRX_FROM_MR) ==
	  SRX_ACC_KEY, "a bad lkey gets SRX_ACC_KEY");
	T(srx_sge_copy(t_sdev, &t_pd, 0, sge, 4, 0, dst, 4000, SRX_FROM_MR) ==
	  SRX_ACC_OK, "a bad lkey after the slice is not looked up");
	sge[3].lkey ^= 0x5a;
	sge[3].length = len;
	T(srx_sge_copy(t_sdev, &t_pd, 0, sge, 4, 4000, dst, len, SRX_FROM_MR) ==
	  SRX_ACC_BOUNDS, "an SGE beyond its MR gets SRX_ACC_BOUNDS");
	sge[3] = (struct srx_sge){ .addr = 0x1000, .length = 16, .lkey = ro->key };
	T(srx_sge_copy(t_sdev, &t_pd, 0, sge, 4, 4000, dst, 16, SRX_FROM_MR) ==
	  SRX_ACC_OK, "a gather from a read-only MR passes");
	T(srx_sge_copy(t_sdev, &t_pd, IB_ACCESS_LOCAL_WRITE, sge, 4, 4000, dst, 16,
		       SRX_TO_MR) == SRX_ACC_ACCESS,
	  "a scatter into a read-only MR gets SRX_ACC_ACCESS");
	T(srx_sge_copy(t_sdev, &t_other_pd, 0, sge, 4, 0, dst, 16, SRX_FROM_MR) ==
	  SRX_ACC_PD, "a QP of another PD gets SRX_ACC_PD");

	/* From softirq: a timer looks the key up and copies. */
	init_completion(&s->done);
	s->key = um->key;
	s->iova = iova + PAGE_SIZE - first - 20;
	timer_setup(&s->timer, t_softirq_fn, 0);
	mod_timer(&s->timer, jiffies + 1);
	T(wait_for_completion_timeout(&s->done, 10 * HZ), "the timer ran");
	del_timer_sync(&s->timer);
	T(s->in_softirq, "the timer ran in softirq");
	T(s->ret == SRX_ACC_OK && !memcmp(s->buf, src + PAGE_SIZE - 20, sizeof(s->buf)),
	  "lookup and copy from softirq return the user bytes");

	/*
	 * Deregistration waits for a reference: hold one, deregister from a
	 * thread, and watch.
	 */
	mr = srx_mr_get(t_sdev, um->key);
	T(mr == um, "a reference is taken");
	if (mr != um)
		goto out;
	d.mr = um;
	init_completion(&d.done);
	/* The page itself stays: the process still maps it. */
	pg0 = um->pages[0];
	T(folio_maybe_dma_pinned(page_folio(pg0)), "the MR's pages are pinned");
	if (IS_ERR(kthread_run(t_dereg_fn, &d, "srx_mraccess_dereg"))) {
		T(0, "dereg thread started");
		srx_mr_put(mr);
		goto out;
	}
	msleep(50);
	T(!srx_mr_get(t_sdev, um->key), "deregistration removes the key first");
	msleep(250);
	T(!completion_done(&d.done), "deregistration waits while a reference is held");
	T(folio_maybe_dma_pinned(page_folio(pg0)),
	  "the pages stay pinned while a reference is held");
	for (i = 0; i < 64; i++)
		dst[i] = (u8)(0x99 ^ i);
	srx_mr_copy(mr, iova, dst, 64, SRX_TO_MR);
	memcpy(src + first, dst, 64);
	T(t_user_equals(uaddr, 0, src, map_len, tmp),
	  "a copy through the held reference reaches the user memory");
	srx_mr_put(mr);
	ok = wait_for_completion_timeout(&d.done, 10 * HZ);
	T(ok, "deregistration returns once the reference is dropped");
	/* d is on this stack: never leave before the thread is done with it. */
	if (!ok)
		wait_for_completion(&d.done);
	T(!folio_maybe_dma_pinned(page_folio(pg0)),
	  "the pages are unpinned once deregistration returns");
	um = NULL;

out:
	if (ro)
		srx_dereg_mr(&ro->base_mr, NULL);
	if (um)
		srx_dereg_mr(&um->base_mr, NULL);
	if (dma)
		srx_dereg_mr(&dma->base_mr, NULL);
	T(atomic_read(&t_sdev->num_mr) == 0 && xa_empty(&t_sdev->mr_xa),
	  "every MR and key index is freed");
	kfree(s);
	kfree(kbuf);
	vfree(tmp);
	vfree(dst);
	vfree(src);
	if (!IS_ERR_VALUE(uaddr))
		vm_munmap(uaddr, map_len);
}

static int __init srx_mraccess_test_init(void)
{
	t_sdev = kzalloc(sizeof(*t_sdev), GFP_KERNEL);
	if (!t_sdev)
		return -ENOMEM;
	xa_init_flags(&t_sdev->mr_xa, XA_FLAGS_ALLOC);
	spin_lock_init(&t_sdev->mw_lock);
	t_sdev->accepts.mr_access = IB_ACCESS_LOCAL_WRITE |
				    IB_ACCESS_REMOTE_WRITE |
				    IB_ACCESS_REMOTE_READ;
	t_sdev->attrs.max_mr_size = U64_MAX;
	t_pd.device = &t_sdev->base_dev;
	t_other_pd.device = &t_sdev->base_dev;

	t_run();

	xa_destroy(&t_sdev->mr_xa);
	kfree(t_sdev);
	pr_info("srx_mraccess_test: %d checks, %d failed\n", t_n, t_failed);
	return t_failed ? -EINVAL : 0;
}

static void __exit srx_mraccess_test_exit(void)
{
}

module_init(srx_mraccess_test_init);
module_exit(srx_mraccess_test_exit);

MODULE_DESCRIPTION("srx selftest: memory-key access (kernel/mr.c) on real memory");
MODULE_LICENSE("Dual BSD/GPL");
