// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rx_test.c - srx's receive checks, frame to parser, on the host
 * (rx_check.h says which and what must hold).
 *
 *  - the corpus: a valid frame of every opcode srx knows, IPv4 and IPv6,
 *    built here from the kernel's own header builder; each is accepted,
 *    and selftests/host/rx_corpus/ holds exactly these and nothing else,
 *    so that the fuzzer (rx_fuzz.c) starts from every opcode. To write the
 *    corpus again after a change of the builder or the table:
 *      RX_WRITE_CORPUS=selftests/host/rx_corpus build/host/rx_test
 *  - each refusal of the frame check and the ICRC, from a valid frame;
 *  - a fixed mutation loop over the corpus with rx_check.h's properties,
 *    which reaches every stage and every frame refusal.
 *
 * A corpus file is a fuzzer input: one control byte (rx_fix()'s @how:
 * fix lengths and ICRC after mutating), then the frame from its IP header.
 */
#include "wire_host.h"

#include "roce_opcode.c"	/* kernel/roce_opcode.c */
#include "roce_pkt.c"		/* kernel/roce_pkt.c */

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "wire_check.h"
#include "rx_check.h"
#include "rng.h"

#include "kselftest_harness.h"

#define RX_MAX		(SRX_IPV6_HDR_SIZE + SRX_UDP_HDR_SIZE + \
			 SRX_ROCE_HDR_MAX + 64 + SRX_ROCE_ICRC_BYTES)
#define RX_CORPUS_MAX	(2 * 256)

struct rx_input {
	char name[64];
	size_t len;		/* control byte included */
	u8 b[1 + RX_MAX];
};

/* The payload of a corpus frame: short, and padded where it may be. */
static u32 rx_payload_len(const struct srx_roce_opcode *op)
{
	if (!(op->flags & SRX_ROCE_F_PAYLOAD))
		return 0;
	if (op->flags & SRX_ROCE_F_ATOMIC_WRITE)
		return 8;
	/* Only a LAST or ONLY packet may carry a pad. */
	return (op->flags & SRX_ROCE_F_LAST) ? 13 : 16;
}

static u16 rx_ip_csum(const u8 *h)
{
	u32 sum = 0;

	for (int i = 0; i < SRX_IPV4_HDR_SIZE; i += 2)
		sum += (u32)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/*
 * A valid frame of @opcode into @b (IP header on, ICRC included), as a
 * peer would send it from a documentation address; returns its length.
 */
static size_t rx_build(u8 *b, u8 opcode, bool ipv6)
{
	const struct srx_roce_opcode *op = srx_roce_opcode(opcode);
	u32 iph = ipv6 ? SRX_IPV6_HDR_SIZE : SRX_IPV4_HDR_SIZE;
	u32 paylen = rx_payload_len(op);
	struct srx_roce_hdr_args a = {
		.opcode = opcode, .pad = srx_roce_pad(paylen), .ackreq = true,
		.pkey = 0xffff, .qpn = 0x11, .psn = 0x123456,
		.va = 0x7f0000001000ull, .rkey = 0x1234, .dma_len = paylen,
		.swap_add = 5, .cmp = 7, .syndrome = 0x1f, .msn = 9,
		.orig = 3, .imm = htobe32(0xfeedf00d), .inv_rkey = 0x4321,
		.qkey = 0x11111111, .src_qpn = 0x22, .flush_type = 1,
	};
	u32 pos = iph + SRX_UDP_HDR_SIZE;
	u32 ulen, len;
	int n;

	memset(b, 0, RX_MAX);
	n = srx_roce_build_hdr(b + pos, RX_MAX - pos, &a);
	if (n <= 0)
		return 0;
	pos += n;
	for (u32 i = 0; i < paylen; i++)
		b[pos++] = (i * 7 + 3) & 0xff;
	pos += a.pad + SRX_ROCE_ICRC_BYTES;
	len = pos;
	ulen = len - iph;

	if (ipv6) {
		static const u8 src[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
		static const u8 dst[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };

		b[0] = 0x60;
		b[4] = ulen >> 8;
		b[5] = ulen & 0xff;
		b[6] = SRX_IPPROTO_UDP;
		b[7] = 64;
		memcpy(b + 8, src, 16);
		memcpy(b + 24, dst, 16);
	} else {
		static const u8 addr[8] = { 192, 0, 2, 1, 192, 0, 2, 2 };
		u16 csum;

		b[0] = 0x45;
		b[2] = len >> 8;
		b[3] = len & 0xff;
		b[4] = 0x12;
		b[5] = 0x34;
		b[6] = 0x40;		/* DF */
		b[8] = 64;
		b[9] = SRX_IPPROTO_UDP;
		memcpy(b + 12, addr, 8);
		csum = rx_ip_csum(b);
		b[10] = csum >> 8;
		b[11] = csum & 0xff;
	}
	b[iph] = 0xc0;			/* source port 0xc001 */
	b[iph + 1] = 0x01;
	b[iph + 2] = 4791 >> 8;
	b[iph + 3] = 4791 & 0xff;
	b[iph + 4] = ulen >> 8;
	b[iph + 5] = ulen & 0xff;
	srx_icrc_put(b + len - SRX_ROCE_ICRC_BYTES,
		     srx_icrc_compute(b, len - SRX_ROCE_ICRC_BYTES, ipv6));
	return len;
}

/* Every corpus input, in opcode order, IPv4 first. */
static int rx_corpus(struct rx_input *in)
{
	int n = 0;

	for (int v6 = 0; v6 < 2; v6++) {
		for (int opc = 0; opc < 256; opc++) {
			const struct srx_roce_opcode *op = srx_roce_opcode(opc);
			struct rx_input *c = &in[n];

			if (!op)
				continue;
			snprintf(c->name, sizeof(c->name), "v%d-%02x-%s",
				 v6 ? 6 : 4, opc, op->name);
			c->b[0] = RX_FIX_LENGTHS | RX_FIX_ICRC;
			c->len = 1 + rx_build(c->b + 1, opc, v6);
			n++;
		}
	}
	return n;
}

static struct rx_input corpus[RX_CORPUS_MAX];
static int ncorpus;

static void corpus_once(void)
{
	if (!ncorpus)
		ncorpus = rx_corpus(corpus);
}

TEST(corpus_frames_are_accepted)
{
	struct rx_verdict v;
	const char *why;

	corpus_once();
	/* Each known opcode, twice. */
	ASSERT_GT(ncorpus, 60);
	for (int i = 0; i < ncorpus; i++) {
		struct rx_input *c = &corpus[i];

		ASSERT_GT(c->len, 1u) TH_LOG("%s: not built", c->name);
		why = rx_check_one(c->b + 1, c->len - 1, &v);
		ASSERT_EQ(NULL, why) TH_LOG("%s: %s", c->name, why);
		EXPECT_EQ(RX_STAGE_ACCEPTED, v.stage)
			TH_LOG("%s: refused at stage %d, %d", c->name,
			       v.stage, v.err);
	}
}

static int write_file(const char *dir, const struct rx_input *c)
{
	char path[4096];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, c->name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	ok = fwrite(c->b, 1, c->len, f) == c->len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

TEST(corpus_dir_is_the_builders)
{
	const char *out = getenv("RX_WRITE_CORPUS");
	const char *dir = out ? out : RX_CORPUS_DIR;
	bool found[RX_CORPUS_MAX] = { false };
	struct dirent *e;
	int files = 0;
	DIR *d;

	corpus_once();
	if (out) {
		mkdir(out, 0755);
		for (int k = 0; k < ncorpus; k++) {
			ASSERT_EQ(0, write_file(out, &corpus[k]))
				TH_LOG("writing %s/%s", out, corpus[k].name);
		}
	}
	d = opendir(dir);
	ASSERT_NE(NULL, d) TH_LOG("%s: %m", dir);
	while ((e = readdir(d))) {
		static u8 buf[1 + RX_MAX + 1];
		char path[4096];
		size_t got;
		FILE *f;
		int i;

		if (e->d_name[0] == '.')
			continue;
		files++;
		for (i = 0; i < ncorpus; i++)
			if (!strcmp(corpus[i].name, e->d_name))
				break;
		EXPECT_LT(i, ncorpus)
			TH_LOG("%s/%s: not a frame this file builds", dir,
			       e->d_name);
		if (i == ncorpus)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "rb");
		ASSERT_NE(NULL, f) TH_LOG("%s: %m", path);
		got = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		EXPECT_TRUE(got == corpus[i].len &&
			    !memcmp(buf, corpus[i].b, got))
			TH_LOG("%s: not what this file builds (write it "
			       "again with RX_WRITE_CORPUS)", path);
		found[i] = true;
	}
	closedir(d);
	for (int k = 0; k < ncorpus; k++) {
		EXPECT_TRUE(found[k]) TH_LOG("%s/%s: missing", dir,
					     corpus[k].name);
	}
	EXPECT_EQ(ncorpus, files);
}

static void set16(u8 *p, u32 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

/* @b's verdict must be @stage with @err. */
#define EXPECT_VERDICT(b, len, want_stage, want_err, what) do {		\
	struct rx_verdict v_;						\
	const char *why_ = rx_check_one(b, len, &v_);			\
	EXPECT_EQ(NULL, why_) TH_LOG("%s: %s", what, why_);		\
	EXPECT_EQ(want_stage, v_.stage) TH_LOG("%s: stage", what);	\
	EXPECT_EQ(want_err, v_.err) TH_LOG("%s: code", what);		\
} while (0)

#define SEND_ONLY	0x04	/* RC SEND_ONLY */

TEST(frame_refusals)
{
	static u8 b[RX_MAX + 64];

	for (int v6 = 0; v6 < 2; v6++) {
		u32 iph = v6 ? SRX_IPV6_HDR_SIZE : SRX_IPV4_HDR_SIZE;
		u32 lenfield = v6 ? 4 : 2;
		size_t len;

		len = rx_build(b, SEND_ONLY, v6);
		EXPECT_VERDICT(b, len, RX_STAGE_ACCEPTED, 0, "valid");

		/* Only the headers readable, or not even those. */
		EXPECT_EQ(-SRX_FRAME_E_AVAIL,
			  srx_roce_frame_check(b, iph + 7, iph, len, v6));
		EXPECT_EQ(-SRX_FRAME_E_AVAIL,
			  srx_roce_frame_check(b, len, iph, iph + 4, v6));
		/* A socket of the other family. */
		EXPECT_EQ(-SRX_FRAME_E_VERSION,
			  srx_roce_frame_check(b, len, iph, len, !v6));

		/* The IP length says more than the frame: the UDP layer
		 * trimmed the frame to the UDP length. */
		set16(b + lenfield, (v6 ? len - iph : len) + 4);
		EXPECT_VERDICT(b, len, RX_STAGE_FRAME, -SRX_FRAME_E_IP_LEN,
			       "IP length over the UDP length");
		len = rx_build(b, SEND_ONLY, v6);
		set16(b + iph + 4, len - iph - 4);
		EXPECT_VERDICT(b, len, RX_STAGE_FRAME, -SRX_FRAME_E_UDP_LEN,
			       "UDP length short of the frame");
		/* IP and UDP lengths agree, for a 10-byte UDP payload. */
		len = iph + SRX_UDP_HDR_SIZE + 10;
		set16(b + lenfield, v6 ? len - iph : len);
		set16(b + iph + 4, len - iph);
		EXPECT_VERDICT(b, len, RX_STAGE_FRAME, -SRX_FRAME_E_SHORT,
			       "no room for a BTH and an ICRC");

		/* Not UDP, as the stack would not have given it to srx. */
		len = rx_build(b, SEND_ONLY, v6);
		b[v6 ? 6 : 9] = v6 ? 0 : 6;	/* hop-by-hop, TCP */
		EXPECT_VERDICT(b, len, RX_STAGE_FRAME, -SRX_FRAME_E_IP_HDR,
			       "IPv6 extension header or IPv4 not UDP");

		/* A bit the ICRC covers, and one it does not. */
		len = rx_build(b, SEND_ONLY, v6);
		b[len - SRX_ROCE_ICRC_BYTES - 1] ^= 0x01;
		EXPECT_VERDICT(b, len, RX_STAGE_ICRC, -1, "payload bit");
		len = rx_build(b, SEND_ONLY, v6);
		b[v6 ? 7 : 8] ^= 0x10;		/* hop limit, TTL */
		EXPECT_VERDICT(b, len, RX_STAGE_ACCEPTED, 0, "masked bit");

		/* A pad count that lies, ICRC right: the parser's. */
		len = rx_build(b, SEND_ONLY, v6);
		b[iph + SRX_UDP_HDR_SIZE + 1] &= ~0x30;
		rx_fix(b, len, RX_FIX_ICRC);
		EXPECT_VERDICT(b, len, RX_STAGE_ACCEPTED, 0, "pad 0 of 3");
		/* An ACK (no payload) with a pad count. */
		len = rx_build(b, 0x11, v6);
		b[iph + SRX_UDP_HDR_SIZE + 1] |= 0x20;
		rx_fix(b, len, RX_FIX_ICRC);
		EXPECT_VERDICT(b, len, RX_STAGE_PARSE,
			       -SRX_ROCE_E_PAD_NO_PAYLOAD, "pad on an ACK");
	}

	/* IPv4 with options: four bytes of NOP before the UDP header. */
	{
		size_t len = rx_build(b, SEND_ONLY, false);

		memmove(b + 24, b + 20, len - 20);
		memset(b + 20, 1, 4);
		b[0] = 0x46;
		len += 4;
		rx_fix(b, len, RX_FIX_LENGTHS);
		EXPECT_VERDICT(b, len, RX_STAGE_FRAME, -SRX_FRAME_E_IP_HDR,
			       "IPv4 options");
	}
}

/* ------------------------------------------------------------------------
 * The mutation loop: deterministic, from the corpus.
 */
#define LOOP_ROUNDS	200000

TEST(mutation_loop)
{
	static u8 b[RX_MAX + 64];
	unsigned int stages[RX_STAGE_COUNT] = { 0 };
	unsigned int frame_err[SRX_FRAME_E_COUNT] = { 0 };
	struct timespec t0, t1;
	double secs;

	corpus_once();
	rng_state = 0x7278c0de87654321ull;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	for (int round = 0; round < LOOP_ROUNDS; round++) {
		const struct rx_input *c = &corpus[rng() % ncorpus];
		size_t len = c->len - 1;
		int flips = rng() % 4;
		struct rx_verdict v;
		const char *why;

		memcpy(b, c->b + 1, len);
		memset(b + len, 0, sizeof(b) - len);
		for (int f = 0; f < flips; f++) {
			/* Mostly the headers: that is where the checks are. */
			u32 span = rng() % 2 ? 64 + 24 : len;
			u32 bit = rng() % (span * 8);

			b[bit / 8] ^= 1 << (bit % 8);
		}
		switch (rng() % 4) {
		case 0:
			len = rng() % (len + 1);	/* truncate */
			break;
		case 1:
			len += rng() % 60;		/* extend */
			break;
		default:
			break;
		}
		rx_fix(b, len, rng() % 4);
		why = rx_check_one(b, len, &v);
		ASSERT_EQ(NULL, why) TH_LOG("round %d, %zu bytes from %s: %s",
					    round, len, c->name, why);
		stages[v.stage]++;
		if (v.stage == RX_STAGE_FRAME)
			frame_err[-v.err]++;
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	TH_LOG("%d inputs in %.2f s of CPU: refused by the frame check %u, "
	       "the ICRC %u, the parser %u; accepted %u", LOOP_ROUNDS, secs,
	       stages[RX_STAGE_FRAME], stages[RX_STAGE_ICRC],
	       stages[RX_STAGE_PARSE], stages[RX_STAGE_ACCEPTED]);
	for (int s = 0; s < RX_STAGE_COUNT; s++) {
		EXPECT_GT(stages[s], 0u) TH_LOG("stage %d never reached", s);
	}
	for (int e = 1; e < SRX_FRAME_E_COUNT; e++) {
		EXPECT_GT(frame_err[e], 0u)
			TH_LOG("frame refusal %d never seen", e);
	}
}

TEST_HARNESS_MAIN
