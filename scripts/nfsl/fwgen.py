#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""ClassBench-style rules and traffic for the fw NF (docs/nf.md "Firewall").

  fwgen.py rules -n 10000 --deny 0.3 --seed 1 -o fw.rules
  fwgen.py trace --rules fw.rules -n 100000 --hit 0.5 --seed 1 -o fw.trace

rules: RULES rules in the format of userspace/lib/nf/nfsl_nf_fw.h, with the structure of
ClassBench's ACL seeds (Taylor & Turner, "ClassBench: a packet
classification benchmark", INFOCOM 2005): addresses from a hierarchy of
sites, subnets and hosts, so rules nest and overlap; many /32 and /24
destinations, wildcard and short sources; source ports mostly any;
destination ports mostly a well-known port, else any, 1024:65535 or a
range; TCP mostly. No rule is a catch-all of a protocol (both addresses
/0 and any destination port): the default action stays reachable.

trace: 5-tuples, one a line "SRC DST SPORT DPORT PROTO RULE": a share --hit
drawn inside a random rule (RULE is its 0-based index; an earlier rule may
match it first, as in ClassBench's trace_generator; --first-match gives
the rule that does), the rest random (RULE -1). Addresses as text, ports
decimal, PROTO the IP protocol number.
"""
import argparse
import ipaddress
import random
import sys

WELL_KNOWN = [20, 21, 22, 23, 25, 53, 67, 69, 80, 110, 119, 123, 135, 137, 139,
              143, 161, 162, 179, 389, 443, 445, 465, 514, 587, 636, 993, 995,
              1433, 1521, 1723, 3306, 3389, 5060, 5432, 8080, 8443]


def frac(s):
    v = float(s)
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{s} is not a fraction 0..1")
    return v


def count(s):
    v = int(s)
    if v < 0:
        raise argparse.ArgumentTypeError(f"{s} is not a count >= 0")
    return v


class Space:
    """An address hierarchy: sites (/8../16), subnets (/24 or /64), hosts."""

    def __init__(self, rng, v6):
        self.rng = rng
        self.bits = 128 if v6 else 32
        self.sites = []
        for _ in range(24):
            if v6:
                site = (0x2001 << 112) | (0x0db8 << 96) | (rng.getrandbits(16) << 80)
                slen = 48
                subnets = [site | (rng.getrandbits(16) << 64)
                           for _ in range(rng.randint(2, 40))]
            else:
                slen = rng.choice([8, 12, 16, 16, 16])
                site = rng.getrandbits(slen) << (32 - slen)
                subnets = [site | (rng.getrandbits(24 - slen) << 8)
                           for _ in range(rng.randint(2, 40))]
            self.sites.append((site, slen, subnets))

    def addr(self):
        """A host address, skewed towards the first sites (Pareto-like)."""
        i = min(int(self.rng.paretovariate(1.2)) - 1, len(self.sites) - 1)
        _, _, subnets = self.sites[i]
        net = self.rng.choice(subnets)
        host_bits = 64 if self.bits == 128 else 8
        if self.bits == 128 and self.rng.random() < 0.7:
            return net | self.rng.randint(1, 255)
        return net | self.rng.getrandbits(host_bits)

    def prefix(self, length):
        a = self.addr()
        if self.rng.random() < 0.05:
            a = self.rng.getrandbits(self.bits)
        mask = ((1 << length) - 1) << (self.bits - length) if length else 0
        return a & mask, length


def pick_len(rng, v6, dst):
    x = rng.random()
    if v6:
        table = ([(0.45, 128), (0.60, 64), (0.75, 48), (0.85, 56), (0.92, 32), (1.0, 0)] if dst
                 else [(0.30, 0), (0.55, 128), (0.70, 64), (0.85, 48), (0.95, 32), (1.0, None)])
    else:
        table = ([(0.45, 32), (0.68, 24), (0.83, None), (0.90, 0), (1.0, 'short')] if dst
                 else [(0.30, 0), (0.55, 32), (0.70, 24), (0.88, None), (1.0, 'short')])
    for p, v in table:
        if x < p:
            if v is None:
                return rng.randint(17, 31) if not v6 else rng.randint(33, 127)
            if v == 'short':
                return rng.randint(8, 16)
            return v
    return 0


def pick_ports(rng, dst):
    x = rng.random()
    if not dst:
        if x < 0.85:
            return 0, 65535
        if x < 0.93:
            return 1024, 65535
        if x < 0.97:
            p = rng.choice(WELL_KNOWN)
            return p, p
        lo = rng.randint(1024, 65000)
        return lo, min(65535, lo + rng.choice([1, 7, 15, 63, 255, 1023]))
    if x < 0.45:
        p = rng.choice(WELL_KNOWN)
        return p, p
    if x < 0.65:
        return 0, 65535
    if x < 0.77:
        return 1024, 65535
    if x < 0.85:
        lo = rng.randint(1024, 65000)
        return lo, min(65535, lo + rng.choice([1, 7, 15, 63, 255, 1023]))
    p = rng.randint(1024, 65535)
    return p, p


def fmt_addr(a, length, v6):
    if v6:
        return f"{ipaddress.IPv6Address(a)}/{length}"
    return f"{ipaddress.IPv4Address(a)}/{length}"


def gen_rules(args):
    rng = random.Random(args.seed)
    sp4, sp6 = Space(rng, False), Space(rng, True)
    out = [f"# fwgen.py rules -n {args.n} --deny {args.deny} --v6 {args.v6} "
           f"--seed {args.seed}",
           "# [@]SRC DST SPORT DPORT PROTO ACTION (userspace/lib/nf/nfsl_nf_fw.h)"]
    for _ in range(args.n):
        v6 = rng.random() < args.v6
        sp = sp6 if v6 else sp4
        sl, dl = pick_len(rng, v6, False), pick_len(rng, v6, True)
        src, dst = sp.prefix(sl), sp.prefix(dl)
        sport, dport = pick_ports(rng, False), pick_ports(rng, True)
        if sl == 0 and dl == 0 and dport == (0, 65535):
            p = rng.choice(WELL_KNOWN)
            dport = (p, p)
        x = rng.random()
        proto = "0x06/0xFF" if x < 0.65 else "0x11/0xFF" if x < 0.90 else \
            "0x00/0x00" if x < 0.98 else "0x01/0xFF"
        action = "deny" if rng.random() < args.deny else "allow"
        out.append(f"@{fmt_addr(*src, v6)}\t{fmt_addr(*dst, v6)}\t{sport[0]} : {sport[1]}\t"
                   f"{dport[0]} : {dport[1]}\t{proto}\t{action}")
    return out


# ---------------------------------------------------------------- trace

def parse_addr(s):
    if s in ("any", "*"):
        return None
    net = ipaddress.ip_network(s, strict=False)
    return net


def parse_ports(s):
    if s in ("any", "*"):
        return 0, 65535
    if ":" in s:
        lo, hi = s.split(":")
        return int(lo), int(hi)
    return int(s), int(s)


def parse_proto(s):
    if s in ("any", "*"):
        return None
    if s.lower() in ("tcp", "udp"):
        return 6 if s.lower() == "tcp" else 17
    if "/" in s:
        v, m = (int(x, 16) for x in s.split("/"))
        return None if m == 0 else v
    return int(s, 0)


def read_rules(path):
    rules = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            tok = line.split()
            while ":" in tok:
                i = tok.index(":")
                tok[i - 1:i + 2] = [tok[i - 1] + ":" + tok[i + 1]]
            tok[0] = tok[0].lstrip("@")
            try:
                src, dst = parse_addr(tok[0]), parse_addr(tok[1])
                rules.append((src, dst, parse_ports(tok[2]), parse_ports(tok[3]),
                              parse_proto(tok[4])))
            except (ValueError, IndexError) as e:
                sys.exit(f"fwgen.py: {path}:{n}: {e} (the fw NF's loader names the fix)")
    return rules


def in_net(rng, net, v6):
    if net is None:
        return ipaddress.IPv6Address(rng.getrandbits(128)) if v6 else \
            ipaddress.IPv4Address(rng.getrandbits(32))
    host = net.max_prefixlen - net.prefixlen
    return net.network_address + (rng.getrandbits(host) if host else 0)


def gen_trace(args):
    rng = random.Random(args.seed)
    rules = read_rules(args.rules)
    usable = [i for i, r in enumerate(rules) if r[4] in (None, 6, 17)]
    n6 = sum(1 for r in rules if (r[0] or r[1]) and (r[0] or r[1]).version == 6)
    share6 = n6 / len(rules) if rules else 0.0
    sp4, sp6 = Space(rng, False), Space(rng, True)
    out = []
    for _ in range(args.n):
        if usable and rng.random() < args.hit:
            i = rng.choice(usable)
            src, dst, sport, dport, proto = rules[i]
            fam = (src or dst)
            v6 = fam.version == 6 if fam else rng.random() < share6
            s, d = in_net(rng, src, v6), in_net(rng, dst, v6)
            sp, dp = rng.randint(*sport), rng.randint(*dport)
            pr = proto if proto is not None else rng.choice([6, 17])
        else:
            i = -1
            v6 = rng.random() < share6
            sp_ = sp6 if v6 else sp4
            s = ipaddress.ip_address(sp_.addr())
            d = ipaddress.ip_address(sp_.addr())
            sp = rng.randint(1024, 65535)
            dp = rng.choice(WELL_KNOWN) if rng.random() < 0.5 else rng.randint(0, 65535)
            pr = rng.choice([6, 17])
        if args.first_match:
            i = first_match(rules, s, d, sp, dp, pr)
        out.append(f"{s} {d} {sp} {dp} {pr} {i}")
    return out


def first_match(rules, s, d, sp, dp, pr):
    for i, (src, dst, sport, dport, proto) in enumerate(rules):
        if src is not None and (src.version != s.version or s not in src):
            continue
        if dst is not None and (dst.version != d.version or d not in dst):
            continue
        if sport[0] <= sp <= sport[1] and dport[0] <= dp <= dport[1] and \
                proto in (None, pr):
            return i
    return -1


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rules", help="generate rules")
    r.add_argument("-n", type=count, default=10000, metavar="RULES",
                   help="number of rules (default 10000)")
    r.add_argument("--deny", type=frac, default=0.3, metavar="FRACTION",
                   help="fraction of rules whose action is deny, 0..1 (default 0.3)")
    r.add_argument("--v6", type=frac, default=0.0, metavar="FRACTION",
                   help="fraction of IPv6 rules, 0..1 (default 0: IPv4 only)")
    r.add_argument("--seed", type=int, default=1, help="random seed (default 1): "
                   "the same seed and options give the same file")
    r.add_argument("-o", "--output", default="-", metavar="FILE",
                   help="output file (default - : stdout)")
    t = sub.add_parser("trace", help="generate 5-tuples for a rules file")
    t.add_argument("--rules", required=True, metavar="FILE", help="rules file to draw from")
    t.add_argument("-n", type=count, default=100000, metavar="TUPLES",
                   help="number of tuples (default 100000)")
    t.add_argument("--hit", type=frac, default=0.5, metavar="FRACTION",
                   help="fraction of tuples drawn inside a rule, 0..1 (default 0.5)")
    t.add_argument("--first-match", action="store_true",
                   help="RULE is the first rule that matches (-1: none), found by a "
                   "linear scan: ~1 s per 10^7 rule x tuple pairs")
    t.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    t.add_argument("-o", "--output", default="-", metavar="FILE",
                   help="output file (default - : stdout)")
    args = ap.parse_args()
    lines = gen_rules(args) if args.cmd == "rules" else gen_trace(args)
    f = sys.stdout if args.output == "-" else open(args.output, "w")
    f.write("\n".join(lines) + "\n")
    if f is not sys.stdout:
        f.close()


if __name__ == "__main__":
    main()
