/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The properties every input to srx_roce_parse() must have, checked on one
 * buffer: shared by wire_test.c's fuzz loop and the libFuzzer target
 * wire_fuzz.c (`make fuzz-wire`). Include after wire_host.h and
 * kernel/roce_opcode.c, kernel/roce_pkt.c.
 *
 * For any bytes and any length:
 *  - parsing reads nothing outside a buffer allocated at the exact length
 *    (ASan), nor outside one holding only the BTH's 12 bytes while @len
 *    claims more (the linear part the net layer guarantees), and both give
 *    the same answer;
 *  - a refusal is one of the enum srx_roce_err codes;
 *  - an accepted packet's parts add up: headers + payload + pad + ICRC is
 *    the length, the payload fits the limits of its opcode;
 *  - rebuilding its headers with srx_roce_build_hdr() from the fields the
 *    accessors read gives back the received bytes, reserved bits cleared:
 *    parser, accessors and builder agree on every field's place.
 */
#ifndef SRX_WIRE_CHECK_H
#define SRX_WIRE_CHECK_H

#include <stdlib.h>

static const char *wire_pkt_same(const struct srx_roce_pkt *a,
				 const struct srx_roce_pkt *b)
{
	if (a->op != b->op || a->qpn != b->qpn || a->psn != b->psn ||
	    a->payload_off != b->payload_off ||
	    a->payload_len != b->payload_len || a->pkey != b->pkey ||
	    a->opcode != b->opcode || a->pad != b->pad || a->se != b->se ||
	    a->mig != b->mig || a->ackreq != b->ackreq ||
	    a->fecn != b->fecn || a->becn != b->becn)
		return "parse of the BTH alone differs from the whole buffer's";
	return NULL;
}

/* The received header bytes with what the builder writes as 0 cleared. */
static void wire_canonical(u8 *h, const struct srx_roce_opcode *op)
{
	h[4] = 0;		/* FECN, BECN, reserved 6 */
	h[8] &= 0x80;		/* AckReq; reserved 7 */
	if (op->off[SRX_ROCE_DETH])
		h[op->off[SRX_ROCE_DETH] + 4] = 0;	/* reserved 8 */
	if (op->off[SRX_ROCE_FETH]) {
		u8 *f = h + op->off[SRX_ROCE_FETH];

		f[0] = f[1] = f[2] = 0;
		f[3] &= 0x3f;	/* SEL 5:4, PLT 3:0 */
	}
}

static const char *wire_rebuild(const u8 *buf, const struct srx_roce_pkt *p)
{
	const struct srx_roce_opcode *op = p->op;
	struct srx_roce_hdr_args a = {
		.opcode = p->opcode, .pad = p->pad, .se = p->se,
		.mig = p->mig, .ackreq = p->ackreq, .pkey = p->pkey,
		.qpn = p->qpn, .psn = p->psn,
	};
	const struct srx_reth *reth = srx_roce_pkt_hdr(p, buf, SRX_ROCE_RETH);
	const struct srx_aeth *aeth = srx_roce_pkt_hdr(p, buf, SRX_ROCE_AETH);
	const struct srx_atmeth *atm = srx_roce_pkt_hdr(p, buf, SRX_ROCE_ATMETH);
	const struct srx_atmack *ack = srx_roce_pkt_hdr(p, buf, SRX_ROCE_ATMACK);
	const struct srx_immdt *imm = srx_roce_pkt_hdr(p, buf, SRX_ROCE_IMMDT);
	const struct srx_ieth *ieth = srx_roce_pkt_hdr(p, buf, SRX_ROCE_IETH);
	const struct srx_deth *deth = srx_roce_pkt_hdr(p, buf, SRX_ROCE_DETH);
	const struct srx_feth *feth = srx_roce_pkt_hdr(p, buf, SRX_ROCE_FETH);
	u8 want[SRX_ROCE_HDR_MAX];
	u8 *got;
	int n;

	if (reth) {
		a.va = srx_reth_va(reth);
		a.rkey = srx_reth_rkey(reth);
		a.dma_len = srx_reth_len(reth);
	}
	if (atm) {
		a.va = srx_atmeth_va(atm);
		a.rkey = srx_atmeth_rkey(atm);
		a.swap_add = srx_atmeth_swap_add(atm);
		a.cmp = srx_atmeth_cmp(atm);
	}
	if (aeth) {
		a.syndrome = srx_aeth_syndrome(aeth);
		a.msn = srx_aeth_msn(aeth);
	}
	if (ack)
		a.orig = srx_atmack_orig(ack);
	if (imm)
		a.imm = srx_immdt_imm(imm);
	if (ieth)
		a.inv_rkey = srx_ieth_rkey(ieth);
	if (deth) {
		a.qkey = srx_deth_qkey(deth);
		a.src_qpn = srx_deth_sqp(deth);
	}
	if (feth) {
		a.flush_type = srx_feth_plt(feth);
		a.flush_level = srx_feth_sel(feth);
	}

	got = malloc(op->hdr_len);
	if (!got)
		return "out of memory";
	n = srx_roce_build_hdr(got, op->hdr_len, &a);
	memcpy(want, buf, op->hdr_len);
	wire_canonical(want, op);
	if (n != op->hdr_len || memcmp(got, want, op->hdr_len)) {
		free(got);
		return "rebuilt headers differ from the parsed ones";
	}
	free(got);
	return NULL;
}

/*
 * Checks one input; returns NULL if every property holds, else what broke.
 * *@result gets srx_roce_parse()'s answer.
 */
static const char *wire_check_one(const u8 *data, u32 len, int *result)
{
	u32 bth_len = len < SRX_ROCE_BTH_BYTES ? len : SRX_ROCE_BTH_BYTES;
	struct srx_roce_pkt pkt, pkt_bth;
	const char *why = NULL;
	u8 *exact, *bth;
	int r, r_bth;

	exact = malloc(len);
	bth = malloc(bth_len);
	if ((!exact && len) || (!bth && bth_len)) {
		free(exact);
		free(bth);
		return "out of memory";
	}
	if (len)
		memcpy(exact, data, len);
	if (bth_len)
		memcpy(bth, data, bth_len);

	r = srx_roce_parse(exact, len, &pkt);
	r_bth = srx_roce_parse(bth, len, &pkt_bth);
	*result = r;

	if (r != r_bth) {
		why = "parse of the BTH alone answers differently";
	} else if (r < 0) {
		if (-r >= SRX_ROCE_E_COUNT)
			why = "refused with a code outside enum srx_roce_err";
	} else if (r > 0) {
		why = "positive return";
	} else if ((why = wire_pkt_same(&pkt, &pkt_bth))) {
		/* reported */
	} else if (pkt.op != srx_roce_opcode(data[0]) ||
		   pkt.opcode != data[0]) {
		why = "opcode or table entry not the BTH's";
	} else if (pkt.payload_off != pkt.op->hdr_len ||
		   (u64)pkt.payload_off + pkt.payload_len + pkt.pad +
		   SRX_ROCE_ICRC_BYTES != len) {
		why = "headers, payload, pad and ICRC do not add up";
	} else if (pkt.payload_len > SRX_ROCE_MAX_PAYLOAD || pkt.pad > 3 ||
		   len % 4) {
		why = "accepted an oversize payload, pad or unaligned length";
	} else if (!(pkt.op->flags & SRX_ROCE_F_PAYLOAD) &&
		   (pkt.payload_len || pkt.pad)) {
		why = "accepted payload on an opcode without one";
	} else if (pkt.qpn == 0 || srx_bth_tver((const void *)data)) {
		why = "accepted QPN 0 or TVer other than 0";
	} else {
		why = wire_rebuild(exact, &pkt);
	}
	free(exact);
	free(bth);
	return why;
}

#endif /* SRX_WIRE_CHECK_H */
