/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whose holding instance a domain is (issue 17 §3). `nfslice migrate`
 * attaches the new instance holding (a threshold no frame reaches) before
 * the switch; killed before it, the migration used to leave that instance
 * attached and reported nowhere. While it holds, the migration tags the
 * new instance's pin directory with a one-entry BPF array pinned as
 * NFSL_PIN_HOLDING: its pid and start time, so that a reused pid is never
 * taken for it. `nfslice list` shows the tag, and `nfslice gc` and
 * nfsliced's housekeeping detach an instance whose migration is gone.
 */
#ifndef NFSL_HOLDING_H
#define NFSL_HOLDING_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

/* The threshold of a holding instance: no frame is this long, so it is
 * attached and splices, but slices nothing. */
#define NFSL_HOLD_THRESHOLD 65535

/* The tag's value. */
struct nfsl_holding {
	__u32 pid;         /* the migration's process (nfslice migrate) */
	__u32 pad;
	__u64 start;       /* its start time, clock ticks after boot
			    * (/proc/PID/stat field 22) */
	__u64 from_cookie; /* netns cookie of the instance it migrates from */
};

/*
 * nfsl_proc_start - start time of process @pid, in clock ticks after boot
 * (field 22 of /proc/@pid/stat). Returns 0, -ENOENT when there is no such
 * process, -EIO when the file cannot be parsed.
 */
int nfsl_proc_start(pid_t pid, __u64 *start);

/*
 * nfsl_holding_mark - tag the domain at pin directory @dir as held by this
 * process (pid and start time), migrating from netns @from_cookie.
 * Returns 0 or -errno (map create, write or pin).
 */
int nfsl_holding_mark(const char *dir, __u64 from_cookie);

/* nfsl_holding_clear - remove the tag of @dir (the instance slices now, or
 * is detached). Returns 0 (also when there was none) or -errno. */
int nfsl_holding_clear(const char *dir);

/*
 * nfsl_holding_get - the tag of the domain at @dir into @h. Returns 0,
 * -ENOENT when it has none, -EPROTO when the pin is not such a map,
 * other -errno.
 */
int nfsl_holding_get(const char *dir, struct nfsl_holding *h);

/* nfsl_holding_alive - is the migration of tag @h still running: its pid
 * exists with the same start time (in this pid namespace)? */
bool nfsl_holding_alive(const struct nfsl_holding *h);

#endif /* NFSL_HOLDING_H */
