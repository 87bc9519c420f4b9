// SPDX-License-Identifier: GPL-2.0
/* The domain's shared maps, by their names in the object: see pins.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfsl/pins.h"
#include "nfsl/domain.h"
#include "nfsl/retired.h"

/* The maps a domain pins: the name in the BPF objects, the pin's name (the
 * pins are what users and older nfslice see: they keep their names). A map
 * of an object named nfsl_* that is not here stays the object's own. */
static const struct {
	const char *map, *pin;
	bool store_sized; /* max_entries = the domain's slots */
} shared[] = {
	{ "nfsl_store", NFSL_PIN_STORE, true },
	{ "nfsl_config", NFSL_PIN_CONFIG },
	{ "nfsl_counters", NFSL_PIN_COUNTERS },
	{ "nfsl_cursor", NFSL_PIN_CURSOR },
	{ "nfsl_chain", NFSL_PIN_CHAIN },
	{ "nfsl_parklog", NFSL_PIN_PARKLOG, true },
	{ "nfsl_mgr_cnt", NFSL_PIN_MGR_COUNTERS },
	{ "nfsl_tcursor", NFSL_PIN_TENANT_CURSOR },
	{ "nfsl_tcnt", NFSL_PIN_TENANT_COUNTERS },
	{ "nfsl_tpfx", NFSL_PIN_TENANT_PREFIX },
	{ "nfsl_tvlan", NFSL_PIN_TENANT_VLAN },
	{ "nfsl_events", NFSL_PIN_EVENTS },
	{ "nfsl_residency", NFSL_PIN_RESIDENCY },
	{ "nfsl_route_gen", NFSL_PIN_ROUTE_GEN },
};

/* The retired keys: pinned in the domain's retired list, not its dir. */
#define RETIRED_MAP "nfsl_retired"

int nfsl_pin_at(struct bpf_map *map, const char *dir, const char *name)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_map__set_pin_path(map, path);
}

/* Pin @map as @dir/@pin; a pin made by an older nfslice (a config map that
 * is not mmapable) is reused with its own flags, else libbpf refuses it as
 * incompatible. */
static int use_pin(struct bpf_map *map, const char *dir, const char *pin)
{
	char path[PATH_MAX + 32];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd, err = nfsl_pin_at(map, dir, pin);

	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/%s", dir, pin);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		err = bpf_map__set_map_flags(map, info.map_flags);
	close(fd);
	return err;
}

static int use_retired(struct bpf_map *map, const char *dir)
{
	char retired[PATH_MAX];
	int err = nfsl_retired_mkdir(dir);

	if (!err)
		err = nfsl_retired_path(retired, sizeof(retired), dir);
	return err ? err : bpf_map__set_pin_path(map, retired);
}

int nfsl_use_domain_maps(struct bpf_object *obj, const char *dir, __u32 slots)
{
	struct bpf_map *map;
	int err = 0;

	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);
		size_t i;

		if (strncmp(name, "nfsl_", 5))
			continue;
		if (!strcmp(name, RETIRED_MAP)) {
			err = use_retired(map, dir);
			if (err)
				return err;
			continue;
		}
		for (i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
			if (!strcmp(name, shared[i].map))
				break;
		if (i == sizeof(shared) / sizeof(shared[0]))
			continue;
		err = use_pin(map, dir, shared[i].pin);
		if (!err && shared[i].store_sized)
			err = bpf_map__set_max_entries(map, slots);
		if (err)
			return err;
	}
	return 0;
}

int nfsl_write_config(const char *dir, const struct nfsl_config *cfg)
{
	char path[PATH_MAX + 32];
	__u32 zero = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_CONFIG);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_map_update_elem(fd, &zero, cfg, 0))
		err = -errno;
	close(fd);
	return err;
}
