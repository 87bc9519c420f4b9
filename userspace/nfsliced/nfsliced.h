/* SPDX-License-Identifier: GPL-2.0 */
/* nfsliced: what its files share (docs/manager.md). */
#ifndef NFSLICED_H
#define NFSLICED_H

#include <stdbool.h>
#include <linux/types.h>
#include <stdatomic.h>
#include <jansson.h>

#include "nfsl/ctl.h"

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
	__u32 idle_timeout; /* s a client may make no progress before it is closed */
};

/*
 * mgr_log - one message at syslog @level: "<N>MESSAGE" under systemd (the
 * journal takes the level from the prefix, SyslogLevelPrefix), else
 * "nfsliced: LEVEL: MESSAGE", on stderr; only if @level is at or above
 * --log-level.
 */
void mgr_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* mgr_log_setup - show levels up to @max_level (MGR_*) from now on.
 * mgr_levels - the levels' names, MGR_ERR first, NULL-terminated (log.c). */
void mgr_log_setup(int max_level);
extern const char *const mgr_levels[];

/*
 * mgr_handle - answer one parsed control request (ctl.h ops). Returns the
 * response (never NULL but on out-of-memory); the caller sends and frees
 * it. mgr_needs_lock - does @r take the host-wide lock (set)? Then only
 * the worker runs it, never the event loop.
 */
json_t *mgr_handle(const struct nfsl_ctl_req *r);
bool mgr_needs_lock(const struct nfsl_ctl_req *r);

/*
 * The worker (worker.c): one thread that runs whatever waits for the
 * host-wide lock (NFSL_LOCK_FILE: a set request, the gc, a move of tenant
 * quotas), so that the event loop, and the TTL scans in it, never wait
 * for another process's lock. Jobs run one at a time in the order posted.
 */
enum mgr_job_kind { MGR_JOB_REQUEST, MGR_JOB_GC, MGR_JOB_TENANTS };

struct mgr_job {
	enum mgr_job_kind kind;
	unsigned long conn;       /* REQUEST: serial of the client that sent it */
	struct nfsl_ctl_req req;  /* REQUEST */
	__u64 now;                /* TENANTS: the tick's time */
	atomic_bool cancelled;    /* REQUEST: its client left; not run */
	json_t *resp;             /* REQUEST: the answer (NULL: not run) */
	int result;               /* GC: mgr_gc()'s */
	struct mgr_job *next;
};

/*
 * mgr_worker_start - start the thread. Returns an eventfd (readable when
 * jobs are done: take them with mgr_worker_done) or -errno.
 * mgr_worker_post - queue @j (calloc'd; the worker owns it until
 * mgr_worker_done hands it back, then the caller frees it).
 * mgr_worker_done - the jobs done since the last call, in order, as a
 * list through ->next.
 * mgr_worker_stop - stop the thread, waiting at most @wait_ms for the job
 * it runs. Returns true when it stopped (false: it still waits for the
 * lock; the process may exit anyway).
 */
int mgr_worker_start(void);
void mgr_worker_post(struct mgr_job *j);
struct mgr_job *mgr_worker_done(void);
bool mgr_worker_stop(unsigned int wait_ms);

/*
 * The control socket's clients (conn.c; docs/manager.md "Connections"):
 * non-blocking, each with its own input and output buffers; requests
 * answered in order, each line at most NFSL_CTL_REQ_MAX bytes. Requests
 * that take the lock go to the worker; the others run at once.
 * mgr_conn_init - serve clients of listening socket @lfd on epoll @ep,
 * closing those that make no progress for @idle_s s.
 * mgr_conn_accept - accept the clients waiting on the listening socket.
 * mgr_conn_event - @events (EPOLL*) of the client that epoll tag @tag
 * (data.u64, at least MGR_CONN_TAG_MIN) names; a tag of a client closed
 * since is ignored. mgr_conn_reply - the worker's answer @resp (stolen) to the
 * client of serial @conn, if still there. mgr_conn_tick - close the
 * clients idle too long at @now (CLOCK_MONOTONIC ns). mgr_conn_again - run
 * the clients that stopped with complete requests left (a per-turn
 * budget); returns true while some still have. mgr_conn_stop - close all.
 */
void mgr_conn_init(int ep, int lfd, unsigned int idle_s);
void mgr_conn_accept(void);
#define MGR_CONN_TAG_MIN 256
void mgr_conn_event(__u64 tag, __u32 events);
void mgr_conn_reply(unsigned long conn, json_t *resp);
void mgr_conn_tick(__u64 now);
bool mgr_conn_again(void);
void mgr_conn_stop(void);

/*
 * mgr_gc - remove the pins of every domain whose network namespace is gone
 * (its namespace probe says so), under the host-wide lock, as nfslice gc
 * does; when an instance nfslice migrate attached holding outlived its
 * migration (userspace/lib/nfsl/holding.h), run nfslice gc to detach it. Returns
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
 * The rtnetlink watcher (links.c): a netlink socket in every network
 * namespace that has domains, in the loop's epoll @ep under the tags
 * MGR_LINKS_TAG.. (below the clients'). mgr_links_refresh - watch the
 * namespaces that have domains now (every second), retry a guard sync the
 * lock put off. mgr_links_event - read the socket of @tag: false when the
 * tag is not a watcher's. mgr_links_stop - close every socket.
 */
#define MGR_LINKS_TAG 16
#define MGR_LINKS_MAX 64
void mgr_links_refresh(int ep);
bool mgr_links_event(__u64 tag);
void mgr_links_stop(void);

/*
 * Dynamic tenant quotas (tenants.c). mgr_tenants_tick - sample every
 * domain in dynamic mode and move its quotas toward demand (call every
 * --tenant-interval); mgr_tenants_stop - forget the samples.
 */
void mgr_tenants_tick(__u64 now);
void mgr_tenants_stop(void);

/* What the daemon counts of itself, shown by /metrics. */
extern atomic_ulong mgr_requests, mgr_gc_removed, mgr_ttl_scans, mgr_ttl_evicted,
	mgr_tenant_moves;

#endif /* NFSLICED_H */
