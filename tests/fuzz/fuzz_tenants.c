// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the tenants file of nfslice attach --tenants and
 * nfslice tenants (userspace/lib/nfsl/tenant.c: nfsl_tenants_parse, then
 * nfsl_tenants_config onto a store of 2 CPUs x 2 partitions x 512 slots;
 * docs/manager.md "Tenants"). Input: the file.
 */
#include "fuzz.h"
#include "nfsl/tenant.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nfsl_tenant_spec sp; /* 5 KiB: not on every call's stack */
	struct nfsl_config cfg = { .ncpus = 2, .nparts = 2, .part_slots = 512, .slots = 2048,
				   .expiry = 2 };
	char err[1024], path[64];
	int fd = fuzz_file(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	err[0] = '\0';
	if (!nfsl_tenants_parse(path, &sp, err, sizeof(err))) {
		fuzz_check(sp.n >= 1 && sp.n <= NFSL_MAX_TENANTS);
		fuzz_check(sp.npfx <= NFSL_MAX_TENANT_PREFIXES && sp.ndevs <= NFSL_MAX_IFACES);
		if (!nfsl_tenants_config(&cfg, &sp, err, sizeof(err))) {
			__u32 used = 0;

			fuzz_check(cfg.ntenants == sp.n);
			for (__u32 t = 0; t < cfg.ntenants; t++)
				used += cfg.tenants[t].size;
			fuzz_check(used <= cfg.part_slots);
		} else {
			fuzz_check(err[0]);
		}
	} else {
		fuzz_check(err[0]); /* every refusal says why */
	}
	close(fd);
	return 0;
}
