// SPDX-License-Identifier: GPL-2.0
/* Retired keys of a domain: see retired.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "nfsl/domain.h"
#include "nfsl/retired.h"
#include "util/util.h"

int nfsl_retired_path(char *buf, size_t len, const char *dir)
{
	const char *name = strrchr(dir, '/'), *ns;
	size_t toplen;

	if (!name || name == dir)
		return -EINVAL;
	for (ns = name - 1; ns > dir && *ns != '/'; ns--)
		;
	if (*ns != '/' || strncmp(ns + 1, "ns", 2))
		return -EINVAL;
	toplen = ns - dir;
	if (snprintf(buf, len, "%.*s/" NFSL_RETIRED_DIR "/%.*s-%s/" NFSL_RETIRED_KEYS,
		     (int)toplen, dir, (int)(name - ns - 1), ns + 1, name + 1) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int nfsl_retired_mkdir(const char *dir)
{
	char path[PATH_MAX], *slash;
	int err = nfsl_retired_path(path, sizeof(path), dir);

	if (err)
		return err;
	slash = strrchr(path, '/');
	*slash = '\0'; /* its directory */
	slash = strrchr(path, '/');
	*slash = '\0'; /* @retired */
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	*slash = '/';
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

int nfsl_retired_keep_probe(const char *dir)
{
	char from[PATH_MAX + 32], to[PATH_MAX], *slash;
	int err = nfsl_retired_path(to, sizeof(to), dir);

	if (err)
		return err;
	slash = strrchr(to, '/');
	snprintf(slash + 1, to + sizeof(to) - slash - 1, "%s", NFSL_PIN_NETNS);
	snprintf(from, sizeof(from), "%s/%s", dir, NFSL_PIN_NETNS);
	if (rename(from, to) && errno != ENOENT)
		return -errno;
	return 0;
}

__u64 nfsl_retire_grace_ms(const struct nfsl_config *cfg)
{
	__u64 ttl_ms = cfg->ttl_us / 1000;

	return ttl_ms > NFSL_RETIRE_GRACE_MS ? ttl_ms : NFSL_RETIRE_GRACE_MS;
}

/* Open (or, with @create, create and pin) the list at @path. */
static int retired_open(const char *path, bool create)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_obj_get(path), err;

	if (fd >= 0) {
		err = nfsl_map_value_check(fd, sizeof(struct nfsl_retired));
		if (err) {
			close(fd);
			return err;
		}
		return fd;
	}
	if (errno != ENOENT || !create)
		return -errno;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "nfsl_retired", sizeof(__u32),
			    sizeof(struct nfsl_retired), 1, &o);
	if (fd < 0)
		return -errno;
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		close(fd);
		/* Pinned meanwhile by another writer (under no lock): use it. */
		return err == -EEXIST ? retired_open(path, false) : err;
	}
	return fd;
}

int nfsl_retire_key(const char *dir, const __u64 key[2], __u64 grace_ms)
{
	struct nfsl_retired r;
	char path[PATH_MAX];
	__u64 now = nfsl_now_ns(), until = now + grace_ms * 1000000ull;
	__u32 zero = 0, pick = 0;
	int fd, err;

	if (!key[0] && !key[1])
		return 0;
	err = nfsl_retired_mkdir(dir);
	if (err || (err = nfsl_retired_path(path, sizeof(path), dir)))
		return err;
	fd = retired_open(path, true);
	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &zero, &r)) {
		err = -errno;
		goto out;
	}
	for (__u32 i = 0; i < NFSL_MAX_RETIRED; i++) {
		struct nfsl_retired_key *k = &r.keys[i];

		if (k->until_ns > now && !memcmp(k->key, key, sizeof(k->key))) {
			pick = i; /* the same key again: extend */
			break;
		}
		if (k->until_ns < r.keys[pick].until_ns)
			pick = i; /* free or expired (0 or past), else ends first */
	}
	memcpy(r.keys[pick].key, key, sizeof(r.keys[pick].key));
	if (r.keys[pick].until_ns < until)
		r.keys[pick].until_ns = until;
	/* One update: the entry replaced was free, expired or the oldest;
	 * the keys the domain uses now are in its config, not here. */
	if (bpf_map_update_elem(fd, &zero, &r, BPF_ANY))
		err = -errno;
out:
	close(fd);
	return err;
}

int nfsl_retire_domain_keys(const char *dir, const struct nfsl_config *cfg)
{
	__u64 grace = nfsl_retire_grace_ms(cfg);
	int err = nfsl_retire_key(dir, cfg->key, grace);

	if (!err && (cfg->flags & NFSL_CFG_KEY_OLD))
		err = nfsl_retire_key(dir, cfg->key_old, grace);
	return err;
}

int nfsl_retired_live(const char *dir, __u64 *left_ns)
{
	struct nfsl_retired r;
	char path[PATH_MAX];
	__u64 now = nfsl_now_ns();
	__u32 zero = 0;
	int fd, n = 0;

	*left_ns = 0;
	fd = nfsl_retired_path(path, sizeof(path), dir);
	if (fd)
		return fd;
	fd = retired_open(path, false);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &zero, &r)) {
		n = -errno;
		goto out;
	}
	for (__u32 i = 0; i < NFSL_MAX_RETIRED; i++) {
		if (r.keys[i].until_ns <= now)
			continue;
		n++;
		if (r.keys[i].until_ns - now > *left_ns)
			*left_ns = r.keys[i].until_ns - now;
	}
out:
	close(fd);
	return n;
}

/* Is the domain whose list is @entry (ns<cookie>-<name>) attached? */
static bool retired_domain_live(const char *top, const char *entry)
{
	char dir[PATH_MAX];
	const char *dash = strchr(entry, '-');
	struct stat st;

	if (!dash || snprintf(dir, sizeof(dir), "%s/%.*s/%s", top, (int)(dash - entry), entry,
			      dash + 1) >= (int)sizeof(dir))
		return false;
	return !stat(dir, &st);
}

/* Is a key of the list at @path in its grace period at @now? */
static bool retired_in_grace(const char *path, __u64 now)
{
	struct nfsl_retired r;
	bool live = false;
	__u32 zero = 0;
	int fd = retired_open(path, false);

	if (fd < 0)
		return false;
	if (!bpf_map_lookup_elem(fd, &zero, &r))
		for (__u32 i = 0; i < NFSL_MAX_RETIRED; i++)
			live |= r.keys[i].until_ns > now;
	close(fd);
	return live;
}

int nfsl_retired_prune(void)
{
	char top[PATH_MAX], rdir[PATH_MAX + 16];
	__u64 now = nfsl_now_ns();
	struct dirent *e;
	int removed = 0;
	DIR *dh;

	snprintf(top, sizeof(top), "%s/nfslice", nfsl_bpffs());
	snprintf(rdir, sizeof(rdir), "%s/" NFSL_RETIRED_DIR, top);
	dh = opendir(rdir);
	if (!dh)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(dh))) {
		char dir[PATH_MAX + 300], path[PATH_MAX + 320];
		__u64 ino;

		if (e->d_name[0] == '.' || retired_domain_live(top, e->d_name))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", rdir, e->d_name);
		snprintf(path, sizeof(path), "%s/" NFSL_RETIRED_KEYS, dir);
		/* Kept while a key is in its grace and its namespace lives:
		 * the probe a detach left here says when it is gone (its
		 * cookie is never reused, so nothing can find the list). */
		if (retired_in_grace(path, now) && nfsl_netns_probe(dir, &ino) != 0)
			continue;
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_NETNS);
		unlink(path);
		if (!rmdir(dir))
			removed++;
	}
	closedir(dh);
	/* Then @retired and nfslice, as a detach removes ns<cookie> and
	 * nfslice once empty (fails while not). */
	if (!rmdir(rdir))
		rmdir(top);
	return removed;
}
