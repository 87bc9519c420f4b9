/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Glue that lets the header-only codec in include/ compile both as BPF C
 * (clang -target bpf) and as user-space C: one codec, two engines (docs/design.md).
 */
#ifndef NFSL_COMPAT_H
#define NFSL_COMPAT_H

#ifdef __bpf__
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <stdbool.h>
#include <stddef.h>
#define nfsl_htons(x) bpf_htons(x)
#define nfsl_ntohs(x) bpf_ntohs(x)
#define nfsl_htonl(x) bpf_htonl(x)
#define nfsl_ntohl(x) bpf_ntohl(x)
#else
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <arpa/inet.h>
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define nfsl_htons(x) htons(x)
#define nfsl_ntohs(x) ntohs(x)
#define nfsl_htonl(x) htonl(x)
#define nfsl_ntohl(x) ntohl(x)
#endif

#define NFSL_INLINE static __always_inline

/* Bounded loops are unrolled for the verifier. gcc does not know clang's
 * "#pragma unroll" and warns, which -Werror turns into a failed build of
 * the user-space engine. */
#ifdef __clang__
#define NFSL_UNROLL _Pragma("unroll")
#else
#define NFSL_UNROLL
#endif

#ifdef __bpf__
#define nfsl_memcpy __builtin_memcpy
/* A typed load: clang would split a memcpy of unknown alignment into byte
 * loads; the verifier accepts unaligned packet loads where the CPU does. */
#define nfsl_load32(p) (*(const __u32 *)(p))
#else
#define nfsl_memcpy memcpy
static inline __u32 nfsl_load32(const void *p)
{
	__u32 v;

	memcpy(&v, p, sizeof(v));
	return v;
}
#endif

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define nfsl_cpu_to_le64(x) __builtin_bswap64(x)
#else
#define nfsl_cpu_to_le64(x) (x)
#endif

#endif /* NFSL_COMPAT_H */
