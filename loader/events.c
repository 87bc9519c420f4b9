// SPDX-License-Identifier: GPL-2.0
/*
 * nfslice events: print a domain's drop events as they come (issue 10 §4;
 * struct nfsl_event, docs/format.md "Drop events").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfslice.h"
#include "util/json_writer.h"

struct events_opts {
	char *name;
	__u32 count;    /* stop after this many events; 0: no limit */
	__u32 duration; /* stop after this many seconds; 0: no limit */
	bool json;
};

static const struct events_opts events_defaults = { .name = "default" };

static const char *const reason_names[NFSL_EV_MAX] = {
	[NFSL_EV_NONE] = "none",
#define NFSL_X_NAME(id, name) [NFSL_EV_##id] = #name,
	NFSL_EVENT_REASONS(NFSL_X_NAME)
#undef NFSL_X_NAME
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct events_run {
	const struct events_opts *o;
	struct json_writer jw;
	__u64 seen;
};

static const char *proto_name(__u8 proto)
{
	return proto == IPPROTO_UDP ? "udp" : proto == IPPROTO_TCP ? "tcp" : "-";
}

/* ring_buffer__new callback: print one event; a negative return (enough
 * events) ends ring_buffer__poll. */
static int print_event(void *ctx, void *data, size_t size)
{
	struct events_run *r = ctx;
	const struct nfsl_event *e = data;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], ifname[IF_NAMESIZE];
	const char *reason;
	int af;

	if (size < sizeof(*e))
		return 0;
	af = e->v6 ? AF_INET6 : AF_INET;
	inet_ntop(af, e->saddr, src, sizeof(src));
	inet_ntop(af, e->daddr, dst, sizeof(dst));
	if (!if_indextoname(e->ifindex, ifname))
		snprintf(ifname, sizeof(ifname), "if%u", e->ifindex);
	reason = e->reason < NFSL_EV_MAX ? reason_names[e->reason] : "unknown";
	if (r->o->json) {
		jsonw_start_object(&r->jw);
		jsonw_uint_field(&r->jw, "ts_ns", e->ts_ns);
		jsonw_uint_field(&r->jw, "ifindex", e->ifindex);
		jsonw_string_field(&r->jw, "ifname", ifname);
		jsonw_string_field(&r->jw, "reason", reason);
		jsonw_string_field(&r->jw, "proto", proto_name(e->proto));
		jsonw_string_field(&r->jw, "src", src);
		jsonw_uint_field(&r->jw, "sport", ntohs(e->sport));
		jsonw_string_field(&r->jw, "dst", dst);
		jsonw_uint_field(&r->jw, "dport", ntohs(e->dport));
		jsonw_uint_field(&r->jw, "dscp", e->dscp);
		jsonw_uint_field(&r->jw, "len", e->len);
		jsonw_uint_field(&r->jw, "slot", e->slot);
		jsonw_uint_field(&r->jw, "gen", e->gen);
		jsonw_end_object(&r->jw); /* ends the line at depth 0 */
	} else {
		printf("%llu.%06llu %-10s %-13s %-3s %s%s%s:%u > %s%s%s:%u %u B dscp %u",
		       (unsigned long long)(e->ts_ns / 1000000000),
		       (unsigned long long)(e->ts_ns % 1000000000 / 1000), ifname, reason,
		       proto_name(e->proto), e->v6 ? "[" : "", src, e->v6 ? "]" : "",
		       ntohs(e->sport), e->v6 ? "[" : "", dst, e->v6 ? "]" : "",
		       ntohs(e->dport), e->len, e->dscp);
		if (e->reason == NFSL_EV_STALE || e->reason == NFSL_EV_TOO_BIG ||
		    e->reason == NFSL_EV_REPLAYED || e->reason == NFSL_EV_ESCAPED)
			printf(" slot %u gen %u", e->slot, e->gen);
		putchar('\n');
	}
	fflush(stdout);
	r->seen++;
	return r->o->count && r->seen >= r->o->count ? -1 : 0;
}

/* The domain's events_lost counter, summed over CPUs; 0 if unreadable. */
static __u64 events_lost(const struct nfsl_domain *d)
{
	struct nfsl_counters sum;

	return nfsl_domain_counters(d, &sum) ? 0 : sum.events_lost;
}

static int run_events(void *p, int argc, char **argv)
{
	const struct events_opts *o = p;
	struct events_run r = { .o = o };
	struct ring_buffer *rb = NULL;
	char path[PATH_MAX + 32];
	struct timespec t0, now;
	struct nfsl_domain d;
	__u64 lost0;
	int fd = -1, rc;

	rc = nfsl_domain_open(&d, o->name);
	if (rc)
		return nfsl_err_domain(rc, o->name);
	snprintf(path, sizeof(path), "%s/%s", d.dir, NFSL_PIN_EVENTS);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		rc = nfsl_err("domain '%s' has no drop events ring buffer (%s: %s): it was "
			      "attached by an older nfslice; nfslice upgrade --name %s adds it",
			      o->name, path, strerror(errno), o->name);
		goto out;
	}
	if (!(d.cfg.flags & NFSL_CFG_EVENTS))
		fprintf(stderr, "nfslice: note: drop events are off in domain '%s': nothing "
			"comes until nfslice set --name %s --events on\n", o->name, o->name);
	if (o->json)
		jsonw_init(&r.jw, stdout);
	rb = ring_buffer__new(fd, print_event, &r, NULL);
	if (!rb) {
		rc = nfsl_err("cannot read the events ring buffer %s: %s", path,
			      strerror(errno));
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	lost0 = events_lost(&d);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = 0;
	while (!stop) {
		int n = ring_buffer__poll(rb, 100 /* ms */);

		if (n == -EINTR)
			continue;
		if (n < 0 && !(o->count && r.seen >= o->count)) {
			rc = nfsl_err("reading the events ring buffer: %s", strerror(-n));
			break;
		}
		if (o->count && r.seen >= o->count)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (o->duration && now.tv_sec - t0.tv_sec +
					   (now.tv_nsec - t0.tv_nsec) / 1e9 >= o->duration)
			break;
	}
	if (!o->json)
		fprintf(stderr, "nfslice: %llu events; %llu lost while listening (ring full: "
			"events_lost)\n", (unsigned long long)r.seen,
			(unsigned long long)(events_lost(&d) - lost0));
out:
	ring_buffer__free(rb);
	if (fd >= 0)
		close(fd);
	nfsl_domain_close(&d);
	return rc;
}

#define OFF(f) offsetof(struct events_opts, f)
static const struct nfsl_opt events_table[] = {
	{ "name", NFSL_OPT_STR, OFF(name),
	  .check = nfsl_name_opt_check, .metavar = "NAME",
	  .help = "domain name (default: default)" },
	{ "count", NFSL_OPT_U32, OFF(count), 1, UINT32_MAX, .metavar = "N",
	  .help = "stop after N events (default: no limit)" },
	{ "duration", NFSL_OPT_DURATION, OFF(duration), 1, 86400, .unit = NFSL_S,
	  .metavar = "SECONDS",
	  .help = "stop after SECONDS s (default: until SIGINT/SIGTERM)" },
	{ "json", NFSL_OPT_FLAG, OFF(json), .help = "one JSON object per event and line" },
	{ NULL },
};

const struct nfsl_cmd nfsl_cmd_events = {
	.name = "events",
	.summary = "print a domain's drop events as they come",
	.description =
		"Prints the packets the domain's slicer and splicer drop or decline to\n"
		"slice, one line each, read from its ring buffer (pin 'events'),\n"
		"written only while the domain's drop events are on (nfslice attach\n"
		"--events, nfslice set --events on|off). Reasons, named as the counters\n"
		"that also count them (nfslice stats): stale (splicer: the payload was\n"
		"evicted; dropped), too_big (splicer: the spliced frame exceeds the\n"
		"egress MTU; dropped), replayed (slicer: one of our tokens arriving from\n"
		"outside; dropped), bad_token (splicer: DSCP 63 but no token of ours;\n"
		"passed untouched), skipped_route (slicer: the route leaves the domain;\n"
		"passed unsliced), skipped_mtu (slicer: larger than the egress MTU;\n"
		"passed for path MTU discovery), escaped_dropped (guard: a sliced header\n"
		"leaving through an interface that is not the domain's, or delivered\n"
		"locally; dropped, its slot freed). Each line: CLOCK_MONOTONIC time in s,\n"
		"interface (the slicer's ingress, the splicer's or guard's egress, the\n"
		"ingress of a locally delivered one), reason,\n"
		"protocol, addresses and ports as seen there, frame length in bytes,\n"
		"DSCP, and the token's slot and generation where one was read. The\n"
		"AF_XDP engine's drops are counted, not streamed. A full ring (4096\n"
		"events) drops events, never packets: counted events_lost. One reader\n"
		"at a time: two would share the events between them.",
	.caps = NFSL_CAPS_READ,
	.caps_why = NFSL_CAPS_READ_WHY,
	.opts = events_table,
	.run = run_events,
	.opts_size = sizeof(struct events_opts),
	.defaults = &events_defaults,
};
