/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The domain's shared maps in an object before it is loaded: every map of
 * the object named nfsl_* that the domain pins (pins.c's table of map
 * names and pin names) is pointed at its pin in the domain's directory,
 * created and pinned by the first object loaded, reused by every later
 * one (attach, repair, upgrade); maps of the object not pinned stay its
 * own (nfsl_scratch).
 */
#ifndef NFSL_PINS_H
#define NFSL_PINS_H

#include <linux/types.h>

struct bpf_map;
struct bpf_object;
struct nfsl_config;

/* nfsl_pin_at - pin @map as @dir/@name (once the object loads). 0 or
 * -errno. */
int nfsl_pin_at(struct bpf_map *map, const char *dir, const char *name);

/*
 * nfsl_use_domain_maps - point the shared maps of @obj (slicer or splicer,
 * opened, not loaded) at the domain's pins in @dir: the store and the park
 * log sized @slots (the park log has the store's geometry), a pin made by
 * an older nfslice reused with its own map flags, the retired keys
 * (splicer) in the domain's retired list (retired.h: it outlives the
 * domain; a list left by a domain of this name detached lately is taken
 * over). Returns 0 or -errno.
 */
int nfsl_use_domain_maps(struct bpf_object *obj, const char *dir, __u32 slots);

/* nfsl_write_config - write @cfg into the config map pinned in @dir. 0 or
 * -errno. */
int nfsl_write_config(const char *dir, const struct nfsl_config *cfg);

#endif /* NFSL_PINS_H */
