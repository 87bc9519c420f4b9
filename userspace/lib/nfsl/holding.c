// SPDX-License-Identifier: GPL-2.0
/* Whose holding instance a domain is (holding.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "nfsl/domain.h"
#include "nfsl/holding.h"

int nfsl_proc_start(pid_t pid, __u64 *start)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm (field 2) may hold spaces and parentheses: fields 3.. start
	 * after its last ')'. Field 22 is the 20th after it. */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	p++;
	for (int field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	if (sscanf(p, " %llu", &v) != 1)
		return -EIO;
	*start = v;
	return 0;
}

int nfsl_holding_mark(const char *dir, __u64 from_cookie)
{
	struct nfsl_holding h = { .pid = getpid(), .from_cookie = from_cookie };
	char path[PATH_MAX + 32];
	__u32 zero = 0;
	int fd, rc;

	rc = nfsl_proc_start(h.pid, &h.start);
	if (rc)
		return rc;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "nfsl_holding", sizeof(zero), sizeof(h), 1,
			    NULL);
	if (fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_HOLDING);
	rc = bpf_map_update_elem(fd, &zero, &h, BPF_ANY) || bpf_obj_pin(fd, path) ? -errno : 0;
	close(fd);
	return rc;
}

int nfsl_holding_clear(const char *dir)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_HOLDING);
	return unlink(path) && errno != ENOENT ? -errno : 0;
}

int nfsl_holding_get(const char *dir, struct nfsl_holding *h)
{
	char path[PATH_MAX + 32];
	__u32 zero = 0;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, NFSL_PIN_HOLDING);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	rc = nfsl_map_value_check(fd, sizeof(*h));
	if (!rc && bpf_map_lookup_elem(fd, &zero, h))
		rc = -errno;
	close(fd);
	return rc;
}

bool nfsl_holding_alive(const struct nfsl_holding *h)
{
	__u64 start;

	return !nfsl_proc_start(h->pid, &start) && start == h->start;
}
