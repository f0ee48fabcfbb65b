// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rx_fuzz.c - libFuzzer target for srx's receive checks, frame to parser
 * (rx_check.h), with ASan and UBSan.
 *
 * An input is one control byte, then a frame from its IP header on. The
 * control byte's low bits are rx_fix()'s: lengths and ICRC made right
 * after mutation, so that the fuzzer also explores what lies behind the
 * checks that a random change would otherwise always fail. The committed
 * corpus (selftests/host/rx_corpus/, written by rx_test.c) has a valid
 * frame of every opcode, IPv4 and IPv6.
 *
 *   selftests/host/rx_fuzz_test.sh   20 s in make check, with coverage
 *   make fuzz FUZZ_SECONDS=600       longer
 *
 * Built twice: with the sanitizers to fuzz, and with clang's coverage
 * instrumentation instead to replay the corpus a run leaves.
 */
#include "wire_host.h"

#include "roce_opcode.c"	/* kernel/roce_opcode.c */
#include "roce_pkt.c"		/* kernel/roce_pkt.c */

#include <stdio.h>
#include <stdlib.h>

#include "wire_check.h"
#include "rx_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rx_verdict v;
	const char *why;
	u8 *frame;
	size_t len;

	if (size < 1 || size > 1 + 16384)
		return -1;	/* four times any RoCE frame: nothing new */
	len = size - 1;
	frame = malloc(len ? len : 1);
	if (!frame)
		abort();
	memcpy(frame, data + 1, len);
	rx_fix(frame, len, data[0]);
	why = rx_check_one(frame, len, &v);
	free(frame);
	if (why) {
		fprintf(stderr, "rx_fuzz: %zu bytes: %s\n", len, why);
		abort();
	}
	return 0;
}
