/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The deterministic generator of the host tests' fuzz loops: xorshift64*
 * (Vigna), enough mixing for a test's inputs. Seed rng_state (not 0)
 * before the first rng().
 */
#ifndef SRX_HOST_RNG_H
#define SRX_HOST_RNG_H

static u64 rng_state;

static u64 rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

#endif /* SRX_HOST_RNG_H */
