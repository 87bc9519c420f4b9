// SPDX-License-Identifier: GPL-2.0
/*
 * nfsliced - the nfslice manager: what the datapath cannot do per packet,
 * for every slicing domain on the host (docs/manager.md; PayloadPark §3.3
 * evictor, §6.2.3 static slices; UNO §3.3.2 migration).
 *
 * One epoll loop that never blocks: the control socket and its clients
 * (conn.c; userspace/lib/nfsl/ctl.h), a signalfd for SIGTERM/SIGINT/SIGHUP, a timerfd
 * for periodic work, one for the TTL scans, and the worker's eventfd:
 * whatever waits for the host-wide lock (a set request, the collection of
 * domains of gone namespaces, a move of tenant quotas) runs on the worker
 * thread (worker.c), so the TTL scans run on time whoever holds the lock.
 * It never detaches anything: on SIGTERM it closes its socket and exits,
 * and the domains keep slicing and splicing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#include "nfsliced.h"
#include "util/caps.h"
#include "util/cli.h"
#include "nfsl/ctl.h"
#include "nfsl/domain.h"
#include "util/log.h"
#include "util/params.h"
#include "util/util.h"

#define TICK_MS 100

static const struct mgr_opts defaults = {
	.log_level = 3, /* info */
	.gc_interval = 10,
	.metrics_port = 9470,
	.tenant_interval = 200,
	.idle_timeout = 10,
};

#define OFF(f) offsetof(struct mgr_opts, f)
static const struct nfsl_opt table[] = {
	{ "socket", NFSL_OPT_STR, OFF(socket), .metavar = "PATH",
	  .help = "control socket (default $NFSLICE_SOCKET, else " NFSL_CTL_SOCKET ")" },
	{ "log-level", NFSL_OPT_ENUM, OFF(log_level), .choices = mgr_levels, .metavar = "LEVEL",
	  .help = "least severe syslog level shown: err, warning, notice, info, debug "
		  "(default info)" },
	{ "gc-interval", NFSL_OPT_DURATION, OFF(gc_interval), 0, 86400, .unit = NFSL_S,
	  .metavar = "SECONDS",
	  .help = "remove domains of gone network namespaces every SECONDS, 0 never "
		  "(default 10)" },
	{ "metrics-port", NFSL_OPT_U32, OFF(metrics_port), 0, 65535, .metavar = "PORT",
	  .help = "serve Prometheus metrics on http://127.0.0.1:PORT/metrics, 0 off "
		  "(default 9470)" },
	{ "tenant-interval", NFSL_OPT_DURATION, OFF(tenant_interval), 0, 60000, .unit = NFSL_MS,
	  .metavar = "MS",
	  .help = "move the quotas of domains with dynamic tenants toward demand every MS "
		  "ms (rounded up to 100), 0 never (default 200)" },
	{ "idle-timeout", NFSL_OPT_DURATION, OFF(idle_timeout), 1, 3600, .unit = NFSL_S,
	  .metavar = "SECONDS",
	  .help = "close a client that sends and reads nothing for SECONDS, a half-sent "
		  "request included (default 10)" },
	{ "duration", NFSL_OPT_DURATION, OFF(duration), 1, 86400 * 365, .unit = NFSL_S,
	  .metavar = "SECONDS",
	  .help = "exit after SECONDS (default: run until SIGTERM or SIGINT)" },
	{ NULL },
};

static const char *const env[] = {
	"NFSLICE_BPFFS", "manage the domains pinned under this bpffs instead of /sys/fs/bpf",
	"NFSLICE_SOCKET", "control socket path instead of " NFSL_CTL_SOCKET,
	NULL,
};

static const struct nfsl_cmd cmd = {
	.name = "nfsliced",
	.prog = MGR_NAME,
	.summary = "manage the slicing domains of the host",
	.description =
		"The nfslice manager. It runs in the foreground (under systemd:\n"
		"nfsliced.service, installed by make install) and manages every\n"
		"slicing domain on the host, whatever its network namespace, through\n"
		"their pins under the bpffs. It serves a control socket (mode 0600) that\n"
		"nfslice uses when it is there (nfslice set; docs/manager.md \"Control\n"
		"protocol\": one JSON object per line each way), changes domain\n"
		"configurations at run time under the host-wide lock with a\n"
		"configuration generation so two writers never race, evicts every\n"
		"domain's payloads parked longer than its TTL (scanning its park log\n"
		"every TTL / 4: PayloadPark §3.3's evictor, by time; the domains are\n"
		"looked for every second), removes the pins of domains whose network\n"
		"namespace is gone (as nfslice gc), moves the quotas of domains whose\n"
		"tenants are in dynamic mode toward measured demand (attempted slices\n"
		"x residency, Little's law; weighted max-min: SuperNIC §4.4), and\n"
		"serves every domain's counters, occupancy and configuration in the\n"
		"Prometheus text format on a loopback HTTP port (--metrics-port).\n"
		"Messages go to stderr with syslog levels (\"<N>\" prefixes when the\n"
		"journal reads them). SIGTERM or SIGINT: it closes its socket and\n"
		"exits 0, leaving every domain slicing and splicing; nothing it does is\n"
		"needed for a packet to be sliced or spliced correctly. Exit 0 on a\n"
		"stop signal or after --duration, 1 when it cannot start (another\n"
		"nfsliced on the socket, NFSLICE_BPFFS not a bpffs), 2 on bad\n"
		"arguments.",
	NFSL_CMD_OPTS(table, struct mgr_opts, defaults),
	.caps = NFSL_CAP(CAP_BPF) | NFSL_CAP(CAP_SYS_ADMIN),
	.caps_why = "read and write the domains' pinned maps",
	.env = env,
	.see_also = "nfslice(8), systemd.service(5)",
};

/* Bind the control socket at @path: refuse if a daemon answers there,
 * replace a stale socket file. Returns the listening fd or -1. */
static int listen_at(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, probe;

	if (strlen(path) >= sizeof(a.sun_path)) {
		mgr_log(MGR_ERR, "--socket '%s' is longer than %zu bytes: give a shorter path",
			path, sizeof(a.sun_path) - 1);
		return -1;
	}
	/* -ETIMEDOUT: a daemon whose backlog is full, alive but stuck. */
	probe = nfsl_ctl_connect(path, NFSL_CTL_TIMEOUT_MS);
	if (probe >= 0 || probe == -ETIMEDOUT) {
		if (probe >= 0)
			close(probe);
		mgr_log(MGR_ERR, "another nfsliced serves %s: stop it first (systemctl stop "
			"nfsliced) or give --socket another path", path);
		return -1;
	}
	unlink(path); /* a stale socket left by a killed daemon */
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || chmod(path, 0600) ||
	    listen(fd, 16)) {
		mgr_log(MGR_ERR, "cannot serve %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* epoll tags of the loop's own fds; a client's is MGR_CONN_TAG_MIN or more. */
enum { TAG_LISTEN = 1, TAG_SIGNAL, TAG_TIMER, TAG_SCAN, TAG_WORKER };

static int add_fd(int ep, int fd, __u64 tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Arm the one-shot TTL timer @fd for @at (CLOCK_MONOTONIC ns), or disarm
 * it (0). */
static void arm_scan(int fd, __u64 at)
{
	struct itimerspec it = { .it_value = { .tv_sec = at / 1000000000ull,
					       .tv_nsec = at % 1000000000ull } };

	timerfd_settime(fd, TFD_TIMER_ABSTIME, &it, NULL);
}

/* A job the worker finished: its answer to its client, or what the
 * periodic job found. */
static void job_done(struct mgr_job *j, bool *gc_busy, bool *ten_busy)
{
	switch (j->kind) {
	case MGR_JOB_REQUEST:
		mgr_conn_reply(j->conn, j->resp);
		break;
	case MGR_JOB_GC:
		*gc_busy = false;
		if (j->result < 0)
			mgr_log(MGR_WARNING, "collecting domains: %s", strerror(-j->result));
		else
			atomic_fetch_add(&mgr_gc_removed, j->result);
		break;
	case MGR_JOB_TENANTS:
		*ten_busy = false;
		break;
	}
	free(j);
}

/* Post a periodic job of @kind unless one is still queued or running
 * (the worker waits for the lock: the next tick tries again). */
static void post_periodic(enum mgr_job_kind kind, __u64 now, bool *busy)
{
	struct mgr_job *j;

	if (*busy)
		return;
	j = calloc(1, sizeof(*j));
	if (!j)
		return;
	j->kind = kind;
	j->now = now;
	*busy = true;
	mgr_worker_post(j);
}

/* The event loop's fds and periodic work. */
struct loop {
	const struct mgr_opts *o;
	const char *path;
	int ep, lfd, sfd, tfd, scfd, wfd;
	__u64 start, next_gc, next_refresh, next_ten; /* CLOCK_MONOTONIC ns */
	bool gc_busy, ten_busy; /* a periodic job queued or running */
};

/* Set up the loop: the control socket, the signalfd (SIGTERM, SIGINT,
 * SIGHUP blocked before the worker starts: it inherits the mask), the
 * tick and TTL timers, the worker, the metrics server. Returns 0 or -1
 * after a message. */
static int loop_open(struct loop *l)
{
	struct itimerspec tick = { .it_interval.tv_nsec = TICK_MS * 1000000L,
				   .it_value.tv_nsec = TICK_MS * 1000000L };
	const struct mgr_opts *o = l->o;
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	/* Before the worker starts: it inherits the mask, and the signals
	 * come to the signalfd only. */
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	l->lfd = listen_at(l->path);
	if (l->lfd < 0)
		return -1;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	l->sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	l->scfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	l->wfd = mgr_worker_start();
	if (l->wfd < 0)
		errno = -l->wfd;
	if (l->ep < 0 || l->sfd < 0 || l->tfd < 0 || l->scfd < 0 || l->wfd < 0 ||
	    timerfd_settime(l->tfd, 0, &tick, NULL) || add_fd(l->ep, l->lfd, TAG_LISTEN) ||
	    add_fd(l->ep, l->sfd, TAG_SIGNAL) || add_fd(l->ep, l->tfd, TAG_TIMER) ||
	    add_fd(l->ep, l->scfd, TAG_SCAN) || add_fd(l->ep, l->wfd, TAG_WORKER)) {
		mgr_log(MGR_ERR, "cannot set up the event loop: %s", strerror(errno));
		return -1;
	}
	mgr_conn_init(l->ep, l->lfd, o->idle_timeout);
	if (o->metrics_port && mgr_metrics_start(o->metrics_port)) {
		mgr_log(MGR_ERR, "cannot serve metrics on 127.0.0.1:%u (taken?): give "
			"--metrics-port another port, or 0 for none", o->metrics_port);
		return -1;
	}
	mgr_log(MGR_NOTICE, "serving %s (bpffs %s)%s", l->path, nfsl_bpffs(),
		o->metrics_port ? "" : ", no metrics");
	if (o->metrics_port)
		mgr_log(MGR_NOTICE, "metrics on http://127.0.0.1:%u/metrics", o->metrics_port);
	return 0;
}

/* The tick: refresh the TTL scanners every second, post the periodic
 * jobs when due, close idle clients. Returns true when --duration is up. */
static bool on_tick(struct loop *l)
{
	const struct mgr_opts *o = l->o;
	__u64 exp, now = nfsl_now_ns();

	if (read(l->tfd, &exp, sizeof(exp)) < 0)
		return false;
	/* Scanners follow the pins: new domains, gone ones. */
	if (now >= l->next_refresh) {
		mgr_ttl_refresh();
		arm_scan(l->scfd, mgr_ttl_tick(now));
		mgr_links_refresh(l->ep);
		l->next_refresh = now + 1000000000ull;
	}
	if (o->tenant_interval && now >= l->next_ten) {
		post_periodic(MGR_JOB_TENANTS, now, &l->ten_busy);
		l->next_ten = now + o->tenant_interval * 1000000ull;
	}
	if (o->duration && now - l->start >= o->duration * 1000000000ull)
		return true;
	if (o->gc_interval && now >= l->next_gc) {
		post_periodic(MGR_JOB_GC, now, &l->gc_busy);
		l->next_gc = now + o->gc_interval * 1000000000ull;
	}
	mgr_conn_tick(now);
	return false;
}

/* One event of epoll tag @tag. Returns true when the daemon stops (a
 * signal, --duration). */
static bool on_event(struct loop *l, __u64 tag, __u32 events)
{
	struct signalfd_siginfo si;
	__u64 exp;

	switch (tag) {
	case TAG_LISTEN:
		mgr_conn_accept();
		return false;
	case TAG_SIGNAL:
		if (read(l->sfd, &si, sizeof(si)) != sizeof(si))
			return false;
		mgr_log(MGR_NOTICE, "%s: stopping; the domains keep working",
			strsignal(si.ssi_signo));
		return true;
	case TAG_SCAN:
		if (read(l->scfd, &exp, sizeof(exp)) >= 0)
			arm_scan(l->scfd, mgr_ttl_tick(nfsl_now_ns()));
		return false;
	case TAG_WORKER:
		for (struct mgr_job *j = mgr_worker_done(), *next; j; j = next) {
			next = j->next;
			job_done(j, &l->gc_busy, &l->ten_busy);
		}
		return false;
	case TAG_TIMER:
		return on_tick(l);
	default:
		if (!mgr_links_event(tag))
			mgr_conn_event(tag, events);
		return false;
	}
}

static void loop_close(struct loop *l)
{
	mgr_metrics_stop();
	mgr_conn_stop();
	/* The worker may wait for another process's lock: not for long. */
	if (mgr_worker_stop(1000))
		mgr_tenants_stop();
	else
		mgr_log(MGR_NOTICE, "a job still waits for the host-wide lock "
			NFSL_LOCK_FILE ": not waited for");
	mgr_ttl_stop();
	mgr_links_stop();
	if (l->scfd >= 0)
		close(l->scfd);
	if (l->lfd >= 0) {
		close(l->lfd);
		unlink(l->path);
	}
	if (l->tfd >= 0)
		close(l->tfd);
	if (l->sfd >= 0)
		close(l->sfd);
	if (l->ep >= 0)
		close(l->ep);
}

static int run(const struct mgr_opts *o, const char *path)
{
	struct loop l = { .o = o, .path = path, .ep = -1, .lfd = -1, .sfd = -1, .tfd = -1,
			  .scfd = -1, .wfd = -1 };
	bool again = false;
	int rc = 1;

	l.start = l.next_gc = l.next_refresh = l.next_ten = nfsl_now_ns();
	if (loop_open(&l))
		goto out;
	for (;;) {
		struct epoll_event ev[16];
		/* Clients with requests left from their last turn: look at
		 * the others and the timers, then come back at once. */
		int n = epoll_wait(l.ep, ev, 16, again ? 0 : -1);

		if (n < 0 && errno != EINTR) {
			mgr_log(MGR_ERR, "epoll_wait: %s", strerror(errno));
			goto out;
		}
		for (int i = 0; i < n; i++) {
			if (on_event(&l, ev[i].data.u64, ev[i].events)) {
				rc = 0;
				goto out;
			}
		}
		again = mgr_conn_again();
	}
out:
	loop_close(&l);
	return rc;
}

int main(int argc, char **argv)
{
	char names[128];
	struct mgr_opts o;
	int first, err;

	err = nfsl_cmd_parse(&cmd, argc, argv, &o, &first);
	if (err)
		return err > 0 ? 0 : NFSL_EXIT_USAGE;
	mgr_log_setup(MGR_ERR + o.log_level);
	if (nfsl_caps_missing(cmd.caps, names, sizeof(names))) {
		mgr_log(MGR_ERR, "missing capabilit%s %s (%s): run it as root or with "
			"AmbientCapabilities= of nfsliced.service", strchr(names, ',') ? "ies" : "y",
			names, cmd.caps_why);
		return NFSL_EXIT_FAIL;
	}
	err = nfsl_bpffs_enter();
	/* Told where the domains are and nothing is there: managing nothing
	 * while looking healthy would hide it. */
	if (err == -ENOENT && getenv("NFSLICE_BPFFS") && *getenv("NFSLICE_BPFFS")) {
		mgr_log(MGR_ERR, "NFSLICE_BPFFS=%s is not a bpffs: mount one there (mount -t bpf "
			"bpf %s) or unset NFSLICE_BPFFS to manage the domains under "
			"/sys/fs/bpf", nfsl_bpffs(), nfsl_bpffs());
		return NFSL_EXIT_FAIL;
	}
	if (err && err != -ENOENT && err != -EACCES) {
		mgr_log(MGR_ERR, "cannot reach the host's bpffs: %s", strerror(-err));
		return NFSL_EXIT_FAIL;
	}
	nfsl_log_init(NFSL_LOG_WARN);
	return run(&o, o.socket ? o.socket : nfsl_ctl_path());
}
