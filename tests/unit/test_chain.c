// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * No way around the splicer (issue 20 §4, docs/design.md): in a libxdp
 * dispatcher the slicer runs last and its XDP_PASS ends the chain, so no
 * XDP program after it sees, let alone redirects, a sliced header. What
 * libxdp reads from the slicer object's run config, as it would when it
 * links the slicer into a dispatcher (this kernel refuses dispatchers:
 * tests/integration/test_xdp_chain.py tests what it allows).
 */
#include <linux/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <criterion/criterion.h>

#include "nfsl_consts.h"
#include "slicer.skel.h"

Test(chain, slicer_runs_last)
{
	struct slicer_bpf *sl = slicer_bpf__open();
	struct xdp_program *p;

	cr_assert_not_null(sl);
	p = xdp_program__from_bpf_obj(sl->obj, NULL);
	cr_assert_eq(libxdp_get_error(p), 0, "libxdp cannot read the slicer object");
	cr_expect_eq(xdp_program__run_prio(p), NFSL_SLICER_RUN_PRIO);
	cr_expect_gt(xdp_program__run_prio(p), 50, "not after libxdp's default priority");
	cr_expect(!xdp_program__chain_call_enabled(p, XDP_PASS),
		  "a program after the slicer would run on what it passes");
	for (unsigned int a = XDP_ABORTED; a <= XDP_REDIRECT; a++)
		cr_expect(!xdp_program__chain_call_enabled(p, a), "chain call on action %u", a);
	xdp_program__close(p);
	slicer_bpf__destroy(sl);
}
