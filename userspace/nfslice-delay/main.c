// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice-delay - hold every frame of a TAP device for a fixed time, then
 * hand it back (userspace/nfslice-delay/delay.h). The benchmark topologies steer the frames
 * an NF should receive through the TAP device with tc mirred, so the NF
 * sees them DELAY later: a stand-in for a slow NF, netem being absent.
 *
 * Steps: parse the options (exit 2 on a bad one), attach to the TAP
 * device, loop { release due frames; read new ones; sleep until the next
 * is due }, and report on SIGINT/SIGTERM or after --duration (exit 0).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <net/if.h>

#include "delay.h"
#include "util/params.h"
#include "util/util.h"

static volatile sig_atomic_t stopping;

#define OFF(f) offsetof(struct dl_opts, f)

static const struct nfsl_opt table[] = {
	{"dev", NFSL_OPT_STR, OFF(dev), .metavar = "IFACE",
	 .help = "TAP device to attach to (required; created if absent)"},
	{"delay", NFSL_OPT_DURATION, OFF(delay_us), 0, 10000000, .unit = NFSL_US,
	 .given = NFSL_GIVEN(struct dl_opts, has_delay), .metavar = "USEC",
	 .help = "hold time in microseconds, 0-10000000 (required)"},
	{"queue", NFSL_OPT_U32, OFF(queue), 1, 1U << 20, .metavar = "FRAMES",
	 .help = "frames held at most, 2 KiB each (default 16384)"},
	{"cpu", NFSL_OPT_U32, OFF(cpu), 0, CPU_SETSIZE - 1,
	 .given = NFSL_GIVEN(struct dl_opts, has_cpu), .metavar = "N",
	 .help = "run on CPU N (default: wherever the scheduler puts it)"},
	{"duration", NFSL_OPT_DURATION, OFF(duration), 1, 86400, .unit = NFSL_S,
	 .metavar = "SECONDS",
	 .help = "stop after SECONDS (default: at SIGINT or SIGTERM)"},
	{"json", NFSL_OPT_FLAG, OFF(json), .help = "print the result as one JSON object"},
	{NULL},
};

static const struct dl_opts defaults = {
	.queue = 16384,
};

static const struct nfsl_cmd cmd = {
	.name = "delay",
	.prog = DL_NAME,
	.summary = "hold every frame of a TAP device for a fixed time",
	.description = "Reads every frame that the kernel sends out of the TAP device IFACE\n"
		       "and writes it back into IFACE (the kernel receives it there) USEC\n"
		       "microseconds after it was read, in arrival order. Frames that find\n"
		       "the line full (--queue) or are 2048 bytes or longer are dropped and\n"
		       "counted; frames still held at exit are counted as left. Wire it into\n"
		       "a path with tc mirred, as scripts/topo_park.sh --nf-delay does: the\n"
		       "stand-in for an NF's processing delay when sizing the payload store\n"
		       "(PayloadPark §6.2.4, Fig. 14; Little's law L = rate x delay).\n"
		       "\n"
		       "Reports frames in and out, drops, and the hold time each frame got\n"
		       "(min, mean, p50, p99, max in us; p50/p99 to 1 us) and the most frames\n"
		       "held at once, on SIGINT/SIGTERM or after --duration. Hold times are\n"
		       "never below USEC; above it by the wakeup latency (timer slack is set\n"
		       "to 1 ns). Exit 0 after a report, 1 on a system error, 2 on bad\n"
		       "arguments.",
	NFSL_CMD_OPTS(table, struct dl_opts, defaults),
	.see_also = "nfslice(8), nfslice-pktgen(8)",
};

static void on_signal(int sig)
{
	stopping = 1;
}

/* Release every frame due by @now, oldest first. */
static void release(int fd, struct dl_line *l, struct dl_stats *s, __u64 now)
{
	struct dl_frame *f;

	while ((f = dl_line_head(l)) && f->due_ns <= now) {
		if (write(fd, f->data, f->len) == (ssize_t)f->len) {
			s->out++;
			s->bytes_out += f->len;
		} else {
			s->write_err++;
		}
		dl_stats_hold(s, now - f->in_ns);
		dl_line_pop(l);
		now = nfsl_now_ns();
	}
}

/* Read the frames waiting, at most DL_READ_BURST, stopping early when the
 * head of the line falls due. Returns 0, or -errno on a read error. */
static int receive(int fd, struct dl_line *l, struct dl_stats *s, __u64 delay_ns)
{
	static __u8 scratch[DL_FRAME_MAX];
	struct dl_frame *f, *head;
	__u64 now;
	ssize_t n;
	int i;

	for (i = 0; i < DL_READ_BURST; i++) {
		f = dl_line_full(l) ? NULL : dl_line_tail(l);
		n = read(fd, f ? f->data : scratch, DL_FRAME_MAX);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		now = nfsl_now_ns();
		s->in++;
		if (!f) {
			s->dropped_full++;
			continue;
		}
		if (n >= DL_FRAME_MAX) {
			s->dropped_big++;
			continue;
		}
		f->len = n;
		f->in_ns = now;
		f->due_ns = now + delay_ns;
		dl_line_push(l);
		if (l->count > s->max_held)
			s->max_held = l->count;
		head = dl_line_head(l);
		if (head->due_ns <= now)
			break;
	}
	return 0;
}

static int run(int fd, const struct dl_opts *o, struct dl_line *l, struct dl_stats *s)
{
	__u64 delay_ns = (__u64)o->delay_us * 1000, start, end, now, wake;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	struct dl_frame *head;
	struct timespec ts;
	int err;

	start = nfsl_now_ns();
	end = o->duration ? start + (__u64)o->duration * 1000000000ULL : UINT64_MAX;
	while (!stopping) {
		now = nfsl_now_ns();
		if (now >= end)
			break;
		release(fd, l, s, now);
		err = receive(fd, l, s, delay_ns);
		if (err)
			return dl_err("reading %s failed: %s", o->dev, strerror(-err));
		now = nfsl_now_ns();
		head = dl_line_head(l);
		wake = head && head->due_ns < end ? head->due_ns : end;
		if (wake <= now)
			continue;
		if (wake == UINT64_MAX) {
			err = ppoll(&pfd, 1, NULL, NULL);
		} else {
			ts.tv_sec = (wake - now) / 1000000000ULL;
			ts.tv_nsec = (wake - now) % 1000000000ULL;
			err = ppoll(&pfd, 1, &ts, NULL);
		}
		if (err < 0 && errno != EINTR)
			return dl_err("poll on %s failed: %s", o->dev, strerror(errno));
		if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
			return dl_err("%s went away (poll revents 0x%x)", o->dev, pfd.revents);
	}
	s->left = l->count;
	s->elapsed_s = (nfsl_now_ns() - start) / 1e9;
	return 0;
}

static int pin_cpu(__u32 cpu)
{
	int err = nfsl_pin_cpu(cpu);

	if (err)
		return dl_err("--cpu %u: cannot run there: %s (see "
			      "/sys/devices/system/cpu/online)",
			      cpu, strerror(-err));
	return 0;
}

int main(int argc, char **argv)
{
	struct dl_stats stats = {};
	struct dl_line line = {};
	struct dl_opts o;
	int first, err, fd = -1, rc = 2;

	err = nfsl_cmd_parse(&cmd, argc, argv, &o, &first);
	if (err)
		return err > 0 ? 0 : 2;
	if (!o.dev) {
		dl_err("--dev IFACE is required: the TAP device to delay frames of");
		goto out;
	}
	if (strlen(o.dev) >= IFNAMSIZ) {
		dl_err("--dev '%s' is longer than %d characters: give an interface name", o.dev,
		       IFNAMSIZ - 1);
		goto out;
	}
	if (!o.has_delay) {
		dl_err("--delay USEC is required: how long to hold each frame");
		goto out;
	}
	rc = 1;
	if (o.has_cpu && pin_cpu(o.cpu))
		goto out;
	if (dl_line_init(&line, o.queue) || dl_stats_init(&stats)) {
		dl_err("cannot allocate a line of %u frames (%zu bytes each): "
		       "give a smaller --queue",
		       o.queue, sizeof(struct dl_frame));
		goto out;
	}
	/* Wake on time: the default 50 us slack would add to every hold. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	/* The signals end ppoll(). */
	nfsl_catch_stop_signals(on_signal);
	fd = dl_tap_open(o.dev);
	if (fd < 0)
		goto out;
	if (run(fd, &o, &line, &stats))
		goto out;
	dl_report(&o, &line, &stats);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	dl_stats_free(&stats);
	dl_line_free(&line);
	return rc;
}
