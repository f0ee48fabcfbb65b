/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What kernel/roce_hdr.h, roce_opcode.c and roce_pkt.c take from the
 * kernel, supplied on the host: the fixed-width and big-endian types
 * (<linux/types.h> is the kernel's uAPI one, so __be16/32/64 are the same
 * names), the byte-order helpers, __packed, memset, the errno values, and
 * static_assert with the kernel's optional message (C11's needs one).
 * Include it before any of those files.
 */
#ifndef SRX_WIRE_HOST_H
#define SRX_WIRE_HOST_H

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/types.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;

#define __packed __attribute__((packed))

#undef static_assert
#define static_assert(expr, ...) srx_static_assert(expr, ##__VA_ARGS__, #expr)
#define srx_static_assert(expr, msg, ...) _Static_assert(expr, msg)

#define be16_to_cpu(x) be16toh(x)
#define be32_to_cpu(x) be32toh(x)
#define be64_to_cpu(x) be64toh(x)
#define cpu_to_be16(x) htobe16(x)
#define cpu_to_be32(x) htobe32(x)
#define cpu_to_be64(x) htobe64(x)

#endif /* SRX_WIRE_HOST_H */
