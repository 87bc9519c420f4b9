// SPDX-License-Identifier: GPL-2.0
/*
 * The library's plumbing under nfslice attach (issue 18 item 2): the shared
 * maps of the slicer and splicer objects are found by their nfsl_* names
 * (nfsl/pins.h), each pinned under the name users see, the store and park
 * log sized as the domain's store, the slicer's private scratch map left
 * alone; and the one rtnetlink client (util/rtnl.h) reads a link by index.
 * Nothing is loaded, pinned or attached: the objects are only opened.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "nfsl/pins.h"
#include "util/rtnl.h"
#include "slicer.skel.h"
#include "splicer.skel.h"

/* The domain's directory: under a temporary top (not bpffs: nothing is
 * pinned, only the retired list's directories are made there). */
static char top[64], dir[128];

static void make_top(void)
{
	snprintf(top, sizeof(top), "/tmp/nfsl-unit-pins-XXXXXX");
	cr_assert_not_null(mkdtemp(top));
	snprintf(dir, sizeof(dir), "%s/ns1/unit", top);
}

static void remove_top(void)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/@retired/ns1-unit", top);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/@retired", top);
	rmdir(path);
	rmdir(top);
}

static void expect_pin(struct bpf_map *map, const char *pin)
{
	char want[256];

	snprintf(want, sizeof(want), "%s/%s", dir, pin);
	cr_assert_not_null(bpf_map__pin_path(map), "%s: no pin", bpf_map__name(map));
	cr_expect_str_eq(bpf_map__pin_path(map), want, "%s", bpf_map__name(map));
}

Test(pins, slicer_maps_by_name, .init = make_top, .fini = remove_top)
{
	struct slicer_bpf *sl = slicer_bpf__open();

	cr_assert_not_null(sl);
	cr_assert_eq(nfsl_use_domain_maps(sl->obj, dir, 1234), 0);
	expect_pin(sl->maps.nfsl_store, "store");
	expect_pin(sl->maps.nfsl_config, "config");
	expect_pin(sl->maps.nfsl_counters, "counters");
	expect_pin(sl->maps.nfsl_cursor, "cursor");
	expect_pin(sl->maps.nfsl_chain, "chain");
	expect_pin(sl->maps.nfsl_parklog, "parklog");
	expect_pin(sl->maps.nfsl_mgr_cnt, "mgr_counters");
	expect_pin(sl->maps.nfsl_tcursor, "tenant_cursor");
	expect_pin(sl->maps.nfsl_tcnt, "tenant_counters");
	expect_pin(sl->maps.nfsl_tpfx, "tenant_prefix");
	expect_pin(sl->maps.nfsl_tvlan, "tenant_vlan");
	expect_pin(sl->maps.nfsl_events, "events");
	expect_pin(sl->maps.nfsl_route_gen, "route_gen");
	cr_expect_null(bpf_map__pin_path(sl->maps.nfsl_rcache), "the route cache is the slicer's own");
	cr_expect_null(bpf_map__pin_path(sl->maps.nfsl_scratch), "the scratch map is the slicer's own");
	cr_expect_eq(bpf_map__max_entries(sl->maps.nfsl_store), 1234);
	cr_expect_eq(bpf_map__max_entries(sl->maps.nfsl_parklog), 1234);
	slicer_bpf__destroy(sl);
}

Test(pins, splicer_maps_by_name, .init = make_top, .fini = remove_top)
{
	struct splicer_bpf *sp = splicer_bpf__open();

	cr_assert_not_null(sp);
	cr_assert_eq(nfsl_use_domain_maps(sp->obj, dir, 99), 0);
	expect_pin(sp->maps.nfsl_store, "store");
	expect_pin(sp->maps.nfsl_config, "config");
	expect_pin(sp->maps.nfsl_counters, "counters");
	expect_pin(sp->maps.nfsl_cursor, "cursor");
	expect_pin(sp->maps.nfsl_events, "events");
	expect_pin(sp->maps.nfsl_residency, "residency");
	{
		char want[256];

		/* the retired keys in their list, which outlives the domain */
		snprintf(want, sizeof(want), "%s/@retired/ns1-unit/keys", top);
		cr_assert_not_null(bpf_map__pin_path(sp->maps.nfsl_retired));
		cr_expect_str_eq(bpf_map__pin_path(sp->maps.nfsl_retired), want);
	}
	cr_expect_eq(bpf_map__max_entries(sp->maps.nfsl_store), 99);
	splicer_bpf__destroy(sp);
}

static int name_of(const struct ifinfomsg *ifi, struct rtattr *const *tb, void *arg)
{
	if (tb[IFLA_IFNAME])
		snprintf(arg, IF_NAMESIZE, "%s", (char *)RTA_DATA(tb[IFLA_IFNAME]));
	return 0;
}

static int count_links(const struct ifinfomsg *ifi, struct rtattr *const *tb, void *arg)
{
	++*(int *)arg;
	return 0;
}

static int stop_at_first(const struct ifinfomsg *ifi, struct rtattr *const *tb, void *arg)
{
	return 7;
}

Test(rtnl, one_link_and_dump)
{
	char name[IF_NAMESIZE] = "", want[IF_NAMESIZE];
	int n = 0;

	cr_assert_not_null(if_indextoname(1, want)); /* lo, in every namespace */
	cr_assert_eq(nfsl_rtnl_links(1, -1, name_of, name), 0);
	cr_expect_str_eq(name, want);
	cr_assert_eq(nfsl_rtnl_links(0, -1, count_links, &n), 0);
	cr_expect_geq(n, 1);
	cr_expect_eq(nfsl_rtnl_links(0, -1, stop_at_first, NULL), 7, "the callback's stop value");
	cr_expect_eq(nfsl_rtnl_links(1 << 30, -1, name_of, name), -ENODEV);
}
