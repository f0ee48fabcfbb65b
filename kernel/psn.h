/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * 24-bit sequence arithmetic: packet sequence numbers (BTH PSN) and message
 * sequence numbers (AETH MSN).
 *
 * Both count modulo 2^24 and wrap from 0xFFFFFF to 0. Two numbers compare
 * by their distance within half the space ([IBTA] 9.7, the responder's
 * PSN checks: a PSN up to 2^23 behind the expected one is a duplicate,
 * one ahead is out of sequence). rxe_verbs.h's psn_compare() shifts the
 * 24-bit difference into the top of an s32 to the same end, which puts
 * the half-space point on the negative side; here the distance lies in
 * (-2^23, 2^23]: exactly half the space away counts as ahead, from either
 * side. Callers keep their windows (outstanding PSNs, duplicate
 * detection) well under 2^23; rxe's are 128 and below.
 *
 * Pure functions of integers, compiled into the host tests unchanged.
 * Every argument may carry garbage above bit 23 (a field read back from a
 * wider word): only its low 24 bits count.
 */
#ifndef SRX_PSN_H
#define SRX_PSN_H

#ifdef __KERNEL__
#include <linux/types.h>
#endif

#define SRX_SEQ24_BITS	24
#define SRX_SEQ24_MASK	0x00ffffffu
#define SRX_SEQ24_HALF	0x00800000u	/* 2^23 */

/* @a + @n modulo 2^24. @n may be any u32 (a count, or a distance). */
static inline u32 srx_seq24_add(u32 a, u32 n)
{
	return (a + n) & SRX_SEQ24_MASK;
}

/*
 * How far @a is after @b, in (-2^23, 2^23]: positive if @a is ahead of
 * @b, negative if behind, 0 if equal.
 */
static inline s32 srx_seq24_diff(u32 a, u32 b)
{
	u32 d = (a - b) & SRX_SEQ24_MASK;

	return d > SRX_SEQ24_HALF ? (s32)d - (s32)(SRX_SEQ24_MASK + 1) :
				    (s32)d;
}

/* @a strictly before @b. */
static inline bool srx_seq24_before(u32 a, u32 b)
{
	return srx_seq24_diff(a, b) < 0;
}

/* @a strictly after @b. */
static inline bool srx_seq24_after(u32 a, u32 b)
{
	return srx_seq24_diff(a, b) > 0;
}

/*
 * @a lies in the @n numbers [@start, @start + @n) modulo 2^24, the window
 * possibly crossing the wrap. An empty window (n == 0) holds nothing; a
 * window of 2^24 or more holds everything.
 */
static inline bool srx_seq24_in_window(u32 a, u32 start, u32 n)
{
	return ((a - start) & SRX_SEQ24_MASK) < n;
}

/* The same, named for what the transport engine counts. */
static inline u32 srx_psn_add(u32 psn, u32 n)
{
	return srx_seq24_add(psn, n);
}

static inline s32 srx_psn_diff(u32 a, u32 b)
{
	return srx_seq24_diff(a, b);
}

static inline bool srx_psn_before(u32 a, u32 b)
{
	return srx_seq24_before(a, b);
}

static inline bool srx_psn_after(u32 a, u32 b)
{
	return srx_seq24_after(a, b);
}

static inline bool srx_psn_in_window(u32 psn, u32 start, u32 n)
{
	return srx_seq24_in_window(psn, start, n);
}

static inline u32 srx_msn_add(u32 msn, u32 n)
{
	return srx_seq24_add(msn, n);
}

static inline s32 srx_msn_diff(u32 a, u32 b)
{
	return srx_seq24_diff(a, b);
}

static inline bool srx_msn_before(u32 a, u32 b)
{
	return srx_seq24_before(a, b);
}

static inline bool srx_msn_after(u32 a, u32 b)
{
	return srx_seq24_after(a, b);
}

static inline bool srx_msn_in_window(u32 msn, u32 start, u32 n)
{
	return srx_seq24_in_window(msn, start, n);
}

#endif /* SRX_PSN_H */
