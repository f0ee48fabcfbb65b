// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wire_fuzz.c - libFuzzer target for srx_roce_parse() (`make fuzz-wire`).
 *
 * Coverage-guided, unlike the fixed fuzz loop of wire_test.c, with the
 * same properties checked on every input (wire_check.h). Not part of make
 * check: it is open-ended by nature. Build and run with clang:
 *   make fuzz-wire                 a short run (FUZZ_WIRE_SECONDS=30)
 *   make fuzz-wire FUZZ_WIRE_SECONDS=600
 * Crashes and the corpus go to build/fuzz-wire/.
 */
#include "wire_host.h"

#include "roce_opcode.c"	/* kernel/roce_opcode.c */
#include "roce_pkt.c"		/* kernel/roce_pkt.c */

#include <stdio.h>
#include <stdlib.h>

#include "wire_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why;
	int res;

	if (size > 16384)
		return -1;	/* four times any packet: nothing new past it */
	why = wire_check_one(data, size, &res);
	if (why) {
		fprintf(stderr, "wire_fuzz: %zu bytes: %s\n", size, why);
		abort();
	}
	return 0;
}
