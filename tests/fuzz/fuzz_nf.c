// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the NF rule files and option strings of nfslice-nf
 * (userspace/lib/nf/; docs/nf.md). The first byte picks the parser (its value mod
 * 5; bit 3: two devices instead of one):
 *   0  a firewall rules file (nfsl_fw_rules_read); every rule parsed is
 *      printed (nfsl_fw_rule_str) and must read back to the same line; the
 *      classifier is built and asked for the rules' own corners
 *   1  fw's init, 2 nat's init, 3 lb's init, 4 qos's init: the options
 * With bit 6 set it picks fwd's init instead (devices "lo", "lo": its
 * macD=, viaD= and neigh= options; a viaD= next hop is looked up in this
 * namespace's neighbour table, or in the neigh=@ file).
 * For the inits the rest is the options, one KEY=VALUE a line, then optionally
 * a NUL and a file's bytes: a value "@" (rules=@, backends=@) names that
 * file.
 */
#include "fuzz.h"
#include "nf/nfsl_nf.h"
#include "nf/nfsl_nf_fw.h"

#define MAX_OPTS 16

static void fw_rules(const uint8_t *d, size_t n)
{
	struct nfsl_fw_rules rs = {}, back;
	struct nfsl_fw *fw = NULL;
	char err[1024], line[512], again[512];
	FILE *f = fmemopen((void *)d, n, "r");

	if (!f)
		return;
	if (nfsl_fw_rules_read(f, "fuzz.rules", &rs, err, sizeof(err))) {
		fuzz_check(err[0]);
		fclose(f);
		return;
	}
	fclose(f);
	for (unsigned int i = 0; i < rs.n && i < 64; i++) {
		nfsl_fw_rule_str(&rs.r[i], line, sizeof(line));
		f = fmemopen(line, strlen(line), "r");
		fuzz_check(f);
		fuzz_check(!nfsl_fw_rules_read(f, "again", &back, err, sizeof(err)));
		fclose(f);
		fuzz_check(back.n == 1);
		nfsl_fw_rule_str(&back.r[0], again, sizeof(again));
		fuzz_check(!strcmp(line, again));
		nfsl_fw_rules_free(&back);
	}
	if (rs.n <= 4096 && !nfsl_fw_build(&fw, rs.r, rs.n, err, sizeof(err))) {
		for (unsigned int i = 0; i < rs.n && i < 64; i++) {
			const struct nfsl_fw_rule *r = &rs.r[i];
			struct nfsl_fw_key k = { .sport = r->sport_lo, .dport = r->dport_hi,
						 .proto = r->proto_any ? 6 : r->proto,
						 .v6 = !(r->family & NFSL_FW_V4) };
			int m;

			memcpy(k.src, r->src, sizeof(k.src));
			memcpy(k.dst, r->dst, sizeof(k.dst));
			/* The rule's own corner matches it or an earlier one. */
			m = nfsl_fw_match(fw, &k);
			fuzz_check(m >= 0 && m <= (int)i);
		}
		nfsl_fw_free(fw);
	}
	nfsl_fw_rules_free(&rs);
}

static void nf_init(const char *name, const uint8_t *d, size_t n, unsigned int ndevs)
{
	const struct nfsl_nf_ops *ops = nfsl_nf_find(name);
	const char *kv[MAX_OPTS + 1];
	char *text, *file_path = NULL, path[64], err[1024];
	const uint8_t *nul = memchr(d, 0, n);
	size_t tlen = nul ? (size_t)(nul - d) : n;
	unsigned int nkv = 0;
	void *shared = NULL;
	int fd = -1;

	if (!ops)
		abort();
	text = malloc(tlen + 1);
	if (!text)
		return;
	memcpy(text, d, tlen);
	text[tlen] = '\0';
	if (nul) {
		fd = fuzz_file(nul + 1, n - tlen - 1, path, sizeof(path));
		file_path = fd >= 0 ? path : NULL;
	}
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && nkv < MAX_OPTS;
	     l = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(l, '=');

		/* KEY=@ names the file: the option rewritten with its path */
		if (eq && !strcmp(eq + 1, "@") && file_path) {
			static char opt[MAX_OPTS][96];

			snprintf(opt[nkv], sizeof(opt[nkv]), "%.*s=%s", (int)(eq - l), l,
				 file_path);
			kv[nkv] = opt[nkv];
		} else {
			kv[nkv] = l;
		}
		nkv++;
	}
	kv[nkv] = NULL;
	{
		static const char *const devs[] = { "lo", "lo" };
		struct nfsl_nf_conf conf = { .kv = kv, .nworkers = 2, .ndevs = ndevs,
					     .devs = devs };

		err[0] = '\0';
		if (!ops->init(&shared, &conf, err, sizeof(err))) {
			if (ops->fini)
				ops->fini(shared);
		} else {
			fuzz_check(err[0]); /* every refusal says why */
		}
	}
	if (fd >= 0)
		close(fd);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const nfs[] = { NULL, "fw", "nat", "lb", "qos" };
	unsigned int sel;

	if (!size)
		return 0;
	sel = data[0];
	if (sel & 0x40)
		nf_init("fwd", data + 1, size - 1, sel & 8 ? 2 : 1);
	else if (sel % 5 == 0)
		fw_rules(data + 1, size - 1);
	else
		nf_init(nfs[sel % 5], data + 1, size - 1, sel & 8 ? 2 : 1);
	return 0;
}
