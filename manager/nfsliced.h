/* SPDX-License-Identifier: GPL-2.0 */
/* nfsliced: what its files share (docs/manager.md). */
#ifndef NFSLICED_H
#define NFSLICED_H

#include <stdbool.h>
#include <linux/types.h>
#include <jansson.h>

#define MGR_NAME "nfsliced"

/* syslog(3) levels, as the --log-level option and the journal know them. */
enum mgr_level { MGR_ERR = 3, MGR_WARNING = 4, MGR_NOTICE = 5, MGR_INFO = 6, MGR_DEBUG = 7 };

struct mgr_opts {
	char *socket;      /* control socket path */
	int log_level;     /* index into mgr_levels[] */
	__u32 gc_interval; /* s between collections of gone namespaces' domains, 0 off */
	__u32 metrics_port; /* loopback TCP port of /metrics, 0 off */
	__u32 duration;    /* s, 0 = until SIGTERM/SIGINT (for tests) */
	__u32 tenant_interval; /* ms between dynamic quota moves, 0 off */
};

/*
 * mgr_log - one message at syslog @level: "<N>MESSAGE" under systemd (the
 * journal takes the level from the prefix, SyslogLevelPrefix), else
 * "nfsliced: LEVEL: MESSAGE", on stderr; only if @level is at or above
 * --log-level.
 */
void mgr_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mgr_log_setup(int max_level);

/*
 * mgr_handle - answer one control request (ctl.h ops). Returns the
 * response (never NULL but on out-of-memory); the caller sends and frees
 * it.
 */
json_t *mgr_handle(json_t *req);

/*
 * mgr_gc - remove the pins of every domain whose network namespace is gone
 * (its namespace probe says so), under the host-wide lock, as nfslice gc
 * does; when an instance nfslice migrate attached holding outlived its
 * migration (lib/nfsl/holding.h), run nfslice gc to detach it. Returns
 * the domains of gone namespaces removed, or -errno.
 */
int mgr_gc(void);

/*
 * mgr_metrics_start - serve the Prometheus text format on
 * http://127.0.0.1:@port/metrics from libmicrohttpd's thread (metrics.c).
 * Returns 0 or -errno (-EADDRINUSE: the port is taken).
 */
int mgr_metrics_start(unsigned int port);
void mgr_metrics_stop(void);

/*
 * TTL eviction (ttl.c). mgr_ttl_refresh - open a scanner for every domain
 * on the host and close those of domains gone (call every second).
 * mgr_ttl_tick - scan every domain due at @now (CLOCK_MONOTONIC ns);
 * returns when the next one is due, 0: none open. mgr_ttl_stop - close
 * them all.
 */
void mgr_ttl_refresh(void);
__u64 mgr_ttl_tick(__u64 now);
void mgr_ttl_stop(void);

/*
 * Dynamic tenant quotas (tenants.c). mgr_tenants_tick - sample every
 * domain in dynamic mode and move its quotas toward demand (call every
 * --tenant-interval); mgr_tenants_stop - forget the samples.
 */
void mgr_tenants_tick(__u64 now);
void mgr_tenants_stop(void);

/* What the daemon counts of itself, shown by /metrics. */
#include <stdatomic.h>
extern atomic_ulong mgr_requests, mgr_gc_removed, mgr_ttl_scans, mgr_ttl_evicted,
	mgr_tenant_moves;

#endif /* NFSLICED_H */
