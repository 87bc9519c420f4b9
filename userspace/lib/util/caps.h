/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Capability checks: a tool asks for the capabilities an operation needs
 * (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN...) in its effective set, not for
 * uid 0, so it runs under systemd with AmbientCapabilities= or with file
 * capabilities, and a refusal names what is missing.
 */
#ifndef NFSL_CAPS_H
#define NFSL_CAPS_H

#include <stddef.h>
#include <linux/capability.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* Bit of capability @cap in a mask of struct nfsl_caps_need. */
#define NFSL_CAP(cap) (1ULL << (cap))

/*
 * nfsl_caps_missing - which of the capabilities in @need (NFSL_CAP() bits)
 * the calling thread lacks in its effective set (capget(2)); CAP_SYS_ADMIN
 * stands for CAP_BPF and CAP_PERFMON, as in the kernel's bpf_capable().
 * Writes their names, comma-separated ("CAP_BPF, CAP_NET_ADMIN"), into
 * @names. Returns that mask (0: all present), or ~0ULL when the set cannot
 * be read (then @names says so).
 */
unsigned long long nfsl_caps_missing(unsigned long long need, char *names,
				     size_t len);

/* "CAP_NET_ADMIN" for CAP_NET_ADMIN; "CAP_<n>" for one it does not know. */
const char *nfsl_cap_name(int cap);

#endif /* NFSL_CAPS_H */
