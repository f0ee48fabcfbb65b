// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ICRC of packets in skbs: icrc.h's CRC over an skb's bytes, linear or
 * not. Received packets are verified where they lie, page fragments and
 * frag lists included, without linearizing them (rxe_udp_encap_recv()
 * linearizes every packet first); sent ones get theirs written in place.
 */
#include <crypto/hash.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "net.h"

/*
 * Which CRC-32 runs over payloads. Both kernels srx supports offer two:
 * lib/crc32.c's crc32_le(), table-driven (slice-by-8 in Debian's builds),
 * and the crypto API's "crc32", whose x86 driver crc32-pclmul folds 64
 * bytes at a time with carry-less multiplies (rdma_rxe's choice,
 * rxe_icrc.c). On a real CPU the second is several times faster over a
 * 4 KiB packet (Documentation/performance.md, pkt_bench); under an
 * emulator that interprets PCLMULQDQ it can be the slower. So, as the
 * kernel's xor and raid6 code pick their routines at boot, srx times both
 * at load and keeps the faster (icrc=auto), unless told (icrc=table,
 * icrc=crypto).
 */
enum srx_icrc_impl {
	SRX_ICRC_AUTO,
	SRX_ICRC_TABLE,
	SRX_ICRC_CRYPTO,
};

static const char *const srx_icrc_names[] = {
	[SRX_ICRC_AUTO] = "auto",
	[SRX_ICRC_TABLE] = "table",
	[SRX_ICRC_CRYPTO] = "crypto",
};

/* What the icrc parameter asked for; read by srx_icrc_init() only. */
static int srx_icrc_wanted = SRX_ICRC_AUTO;

/*
 * The crypto API's "crc32" when it won, or NULL for crc32_le(). Set by
 * srx_icrc_init() before any device exists and freed by srx_icrc_exit()
 * after the last one has gone, so the data path reads it without a lock.
 */
static struct crypto_shash *srx_icrc_tfm __ro_after_init;

static int srx_icrc_param_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(srx_icrc_names, val);

	if (i < 0)
		return -EINVAL;
	srx_icrc_wanted = i;
	return 0;
}

/* Reads back the CRC-32 in use: the crypto driver's name, or crc32_le. */
static int srx_icrc_param_get(char *buf, const struct kernel_param *kp)
{
	if (srx_icrc_tfm)
		return sysfs_emit(buf, "%s\n",
				  crypto_shash_driver_name(srx_icrc_tfm));
	return sysfs_emit(buf, "%s\n", "crc32_le");
}

static const struct kernel_param_ops srx_icrc_param_ops = {
	.set = srx_icrc_param_set,
	.get = srx_icrc_param_get,
};

/* 0444: the choice is made once, at load. */
module_param_cb(icrc, &srx_icrc_param_ops, NULL, 0444);
MODULE_PARM_DESC(icrc,
		 "CRC-32 for the ICRC: auto (default: the faster on this CPU, timed at load), table (crc32_le), crypto (the crypto API's \"crc32\"); reads back the one in use");

/*
 * @crc continued over @len bytes at @p by the crypto API's "crc32", which
 * keeps the bare register as its descriptor's state (crypto/crc32_generic.c
 * and arch/x86/crypto/crc32-pclmul_glue.c: a u32, not inverted): seeding
 * it and reading it back continue a crc32_le() computation, as rdma_rxe's
 * rxe_crc32() does (rxe_icrc.c). Out of line so that the descriptor's
 * stack is only taken on this path.
 */
static noinline u32 srx_crc32_shash(struct crypto_shash *tfm, u32 crc,
				    const u8 *p, unsigned int len)
{
	SHASH_DESC_ON_STACK(desc, tfm);
	u32 *state = shash_desc_ctx(desc);

	desc->tfm = tfm;
	*state = crc;
	/* Cannot fail: "crc32"'s update only computes. */
	if (WARN_ON_ONCE(crypto_shash_update(desc, p, len)))
		return crc32_le(crc, p, len);
	return *state;
}

/* @crc continued over @len bytes at @p: by @tfm, or crc32_le() if NULL. */
static inline u32 srx_crc32(struct crypto_shash *tfm, u32 crc, const u8 *p,
			    unsigned int len)
{
	if (!tfm)
		return crc32_le(crc, p, len);
	return srx_crc32_shash(tfm, crc, p, len);
}

#define SRX_ICRC_BENCH_BYTES	4096
#define SRX_ICRC_BENCH_RUNS	5

/*
 * The fastest of SRX_ICRC_BENCH_RUNS computations of a 4 KiB buffer's CRC
 * by @tfm (NULL: crc32_le()), in ns; its CRC in @crc. The best run, not
 * the mean: a run an interrupt or preemption lengthened says nothing
 * about the code.
 */
static u64 srx_icrc_time(struct crypto_shash *tfm, const u8 *buf, u32 *crc)
{
	u64 best = U64_MAX, t;
	int i;

	for (i = 0; i < SRX_ICRC_BENCH_RUNS; i++) {
		t = ktime_get_ns();
		*crc = srx_crc32(tfm, ~0u, buf, SRX_ICRC_BENCH_BYTES);
		t = ktime_get_ns() - t;
		best = min(best, t);
	}
	return best;
}

/*
 * Choose the payload CRC-32 (see srx_icrc_wanted). The crypto one must
 * give crc32_le()'s result on a 4 KiB buffer of known bytes, or it is not
 * used: icrc=crypto then fails the load, icrc=auto keeps crc32_le().
 *
 * Context: process, module init.
 */
int srx_icrc_init(void)
{
	u64 t_table, t_crypto;
	struct crypto_shash *tfm;
	u32 want, got;
	u8 *buf;
	int i, ret = 0;

	if (srx_icrc_wanted == SRX_ICRC_TABLE)
		goto out;

	tfm = crypto_alloc_shash("crc32", 0, 0);
	if (IS_ERR(tfm)) {
		ret = PTR_ERR(tfm);
		pr_info("srx: no \"crc32\" in the crypto API (%d)\n", ret);
		goto err_wanted;
	}

	buf = kmalloc(SRX_ICRC_BENCH_BYTES, GFP_KERNEL);
	if (!buf) {
		ret = -ENOMEM;
		goto err_tfm;
	}
	for (i = 0; i < SRX_ICRC_BENCH_BYTES; i++)
		buf[i] = i * 131 + (i >> 8);

	t_table = srx_icrc_time(NULL, buf, &want);
	t_crypto = srx_icrc_time(tfm, buf, &got);
	kfree(buf);
	if (got != want) {
		pr_warn("srx: %s computes 0x%08x where crc32_le computes 0x%08x: not used\n",
			crypto_shash_driver_name(tfm), got, want);
		ret = -EIO;
		goto err_tfm;
	}
	pr_info("srx: CRC-32 of 4 KiB: crc32_le %llu ns, %s %llu ns\n",
		t_table, crypto_shash_driver_name(tfm), t_crypto);
	if (srx_icrc_wanted == SRX_ICRC_AUTO && t_crypto >= t_table) {
		crypto_free_shash(tfm);
		goto out;
	}
	srx_icrc_tfm = tfm;
	goto out;

err_tfm:
	crypto_free_shash(tfm);
err_wanted:
	/* Only an explicit icrc=crypto makes this fatal. */
	if (srx_icrc_wanted == SRX_ICRC_CRYPTO)
		return ret;
out:
	pr_info("srx: ICRC by %s\n", srx_icrc_tfm ?
		crypto_shash_driver_name(srx_icrc_tfm) : "crc32_le");
	return 0;
}

/* Context: process, module init's unwinding or module exit. */
void srx_icrc_exit(void)
{
	if (srx_icrc_tfm)
		crypto_free_shash(srx_icrc_tfm);
}

/*
 * The ICRC over @skb from its network header up to @end (an offset from
 * skb->data, where the ICRC starts). The IP header must be linear and
 * directly followed by the UDP header at the transport header, as the IP
 * and UDP layers leave a received packet and srx_net_xmit() builds one;
 * the UDP header and BTH may lie anywhere.
 *
 * Context: any.
 */
static u32 srx_icrc_skb(const struct sk_buff *skb, unsigned int end,
			bool ipv6)
{
	unsigned int iplen = ipv6 ? SRX_IPV6_HDR_SIZE : SRX_IPV4_HDR_SIZE;
	unsigned char hdr[SRX_ICRC_MASKED_MAX];
	unsigned int off = skb_transport_offset(skb);
	unsigned int consumed = 0, n;
	struct skb_seq_state st;
	const u8 *p;
	u32 crc;

	memcpy(hdr, skb_network_header(skb), iplen);
	/* Inside the skb: the callers have checked its length. */
	skb_copy_bits(skb, off, hdr + iplen,
		      SRX_UDP_HDR_SIZE + SRX_ROCE_BTH_BYTES);
	crc = srx_icrc_begin_copy(hdr, ipv6);

	/*
	 * Extension headers, payload and pad: block by block. A block may
	 * run past @end (skb_seq_read() stops at the end of the linear part
	 * or fragment, not at the upper bound given to it), so clamp it.
	 */
	off += SRX_UDP_HDR_SIZE + SRX_ROCE_BTH_BYTES;
	skb_prepare_seq_read((struct sk_buff *)skb, off, end, &st);
	while (consumed < end - off &&
	       (n = skb_seq_read(consumed, &p, &st)) != 0) {
		n = min(n, end - off - consumed);
		crc = srx_crc32(srx_icrc_tfm, crc, p, n);
		consumed += n;
	}
	skb_abort_seq_read(&st);
	return srx_icrc_final(crc);
}

/*
 * Whether the ICRC in the last SRX_ROCE_ICRC_BYTES bytes of @skb is right.
 * The caller has checked that the skb holds UDP, BTH and ICRC after the
 * transport header (net.c, srx_rcv_well_formed()).
 *
 * Context: any; softirq on receive.
 */
bool srx_icrc_verify(const struct sk_buff *skb, bool ipv6)
{
	unsigned int end = skb->len - SRX_ROCE_ICRC_BYTES;
	unsigned char buf[SRX_ROCE_ICRC_BYTES];
	const unsigned char *p;

	p = skb_header_pointer(skb, end, SRX_ROCE_ICRC_BYTES, buf);
	return p && srx_icrc_get(p) == srx_icrc_skb(skb, end, ipv6);
}

/*
 * Write the ICRC into the last SRX_ROCE_ICRC_BYTES bytes of @skb, which
 * the packet's headers and payload do not use (srx_net_alloc_skb()
 * reserves them), wherever those bytes lie.
 *
 * Context: any.
 */
void srx_icrc_generate(struct sk_buff *skb, bool ipv6)
{
	unsigned int end = skb->len - SRX_ROCE_ICRC_BYTES;
	unsigned char buf[SRX_ROCE_ICRC_BYTES];

	srx_icrc_put(buf, srx_icrc_skb(skb, end, ipv6));
	/* Cannot fail: the range lies inside the skb. */
	WARN_ON_ONCE(skb_store_bits(skb, end, buf, SRX_ROCE_ICRC_BYTES));
}
