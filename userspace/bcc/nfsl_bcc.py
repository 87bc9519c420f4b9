# SPDX-License-Identifier: GPL-2.0
"""What the bcc tools (nfslice-drops, nfslice-top) share.

bcc compiles its C with kernel headers at run time. This platform's kernel
(6.18) ships none; scripts/install-deps.sh links Debian's 6.1 headers as
/lib/modules/$(uname -r)/build (docs/platform.md). Those serve the compiler
only: the tools take every struct offset from the running kernel's BTF
(Btf below) and every tracepoint field offset and symbol name from its
tracefs format files (tp_format), and pass them to the BPF programs as -D
defines. So the programs read sk_buff and net_device fields with
bpf_probe_read_kernel at the offsets of the kernel that runs, never the
headers' guesses.

Also here: the network namespace the tools look at (Netns: the current
one, or --netns NAME|PATH, entered with nsenter for commands and setns for
its cookie), the nfslice CLI they ask for the domain (find_nfslice), the
domain's interfaces, and --man / --bash-completion from an argparse parser
(as the C tools make theirs from their option tables).

Stdlib only (bcc itself is imported by load_bpf()). Runs with
/usr/bin/python3, Debian's interpreter with python3-bpfcc.
"""
import argparse
import ctypes
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The source tree when run from it: userspace/bcc/ -> the repository root.
ROOT = HERE.parents[1]
BTF_PATH = "/sys/kernel/btf/vmlinux"
TRACEFS = "/sys/kernel/tracing"
SO_NETNS_COOKIE = 71            # <asm-generic/socket.h>, Linux 5.14
CLONE_NEWNET = 0x40000000


class ToolError(Exception):
    """A failure the tool reports as one line and exit status 1."""


def note(tool, msg):
    """"TOOL: MSG" on stderr at once."""
    print(f"{tool}: {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------- BTF --
class Btf:
    """Type lookups in the running kernel's BTF (BTF_PATH), as bpftool
    dumps it (`bpftool -j btf dump file PATH`).

    Only what the tools need: the byte offset of a member path inside a
    struct (anonymous unions and structs are searched through, as C does)
    and the value of an enumerator.
    """

    QUALIFIERS = ("TYPEDEF", "VOLATILE", "CONST", "RESTRICT", "TYPE_TAG")

    def __init__(self, path=BTF_PATH):
        try:
            cp = subprocess.run(["bpftool", "-j", "btf", "dump", "file",
                                 str(path)], capture_output=True, text=True,
                                timeout=60)
        except OSError as e:
            raise ToolError(f"cannot run bpftool ({e.strerror}): the tools "
                            "read the kernel's BTF with it; install it "
                            "(scripts/install-deps.sh)") from None
        if cp.returncode:
            raise ToolError(f"cannot read the kernel's BTF ({path}: "
                            f"{cp.stderr.strip()}): the tools need "
                            "CONFIG_DEBUG_INFO_BTF")
        self.types = {0: {"kind": "VOID"}}
        self.by_name = {}           # (kind, name) -> first type
        for t in json.loads(cp.stdout)["types"]:
            self.types[t["id"]] = t
            if t["kind"] in ("STRUCT", "UNION", "ENUM", "ENUM64") and \
                    t.get("name") != "(anon)":
                self.by_name.setdefault((t["kind"], t["name"]), t)

    def _resolve(self, t):
        """Type T with typedefs and qualifiers stripped."""
        while t["kind"] in self.QUALIFIERS:
            t = self.types[t["type_id"]]
        return t

    def _find(self, t, member):
        """(bit offset, type) of MEMBER in struct/union T, looking through
        anonymous members; None when it has none."""
        for m in t.get("members", ()):
            if m["name"] == member:
                return m["bits_offset"], self.types[m["type_id"]]
            if m["name"] == "(anon)":
                sub = self._resolve(self.types[m["type_id"]])
                if sub["kind"] in ("STRUCT", "UNION"):
                    hit = self._find(sub, member)
                    if hit is not None:
                        return m["bits_offset"] + hit[0], hit[1]
        return None

    def offset(self, path):
        """Byte offset of "struct.member[.member...]", e.g.
        "net_device.nd_net.net". Raises ToolError when the kernel has no
        such struct or member, or it is a bitfield."""
        sname, *members = path.split(".")
        t = self.by_name.get(("STRUCT", sname))
        if t is None:
            raise ToolError(f"the kernel's BTF has no struct {sname}")
        bits = 0
        for m in members:
            hit = self._find(t, m) if t["kind"] in ("STRUCT", "UNION") \
                else None
            if hit is None:
                raise ToolError(f"the kernel's BTF has no member {path} "
                                f"(at '{m}')")
            bits += hit[0]
            t = self._resolve(hit[1])
        if bits % 8:
            raise ToolError(f"{path} is a bitfield")
        return bits // 8

    def enum_value(self, enum, name):
        """Value of enumerator NAME of enum ENUM, or None."""
        t = self.by_name.get(("ENUM", enum))
        for v in (t or {}).get("values", ()):
            if v["name"] == name:
                return v["val"]
        return None
        _, _, vlen, _, _ = self._hdr(tid)
        base = self.pos[tid] + 12
        for i in range(vlen):
            name_off, val = struct.unpack_from("<Ii", self.data, base + 8 * i)
            if self.name(name_off) == name:
                return val
        return None


# -------------------------------------------------------------- tracefs --
def ensure_tracefs():
    """Mount tracefs on TRACEFS unless it is there (none is at boot on
    this platform; `ip netns exec` gives a fresh /sys without it, in a
    mount namespace of its own, where the mount goes away with us)."""
    if os.path.exists(f"{TRACEFS}/events"):
        return
    cp = subprocess.run(["mount", "-t", "tracefs", "tracefs", TRACEFS],
                        capture_output=True, text=True)
    if cp.returncode != 0:
        raise ToolError(f"tracefs is not mounted and mount -t tracefs "
                        f"tracefs {TRACEFS} failed: {cp.stderr.strip()}")


def _symbolic(fmt, field):
    """{value: name} of the __print_symbolic(REC->FIELD, ...) in print
    fmt FMT, {} when there is none."""
    m = re.search(r"__print_symbolic\(\s*REC->" + re.escape(field) +
                  r"\s*,", fmt)
    if not m:
        return {}
    depth, i = 1, m.end()
    while i < len(fmt) and depth:
        depth += {"(": 1, ")": -1}.get(fmt[i], 0)
        i += 1
    return {int(v): n for v, n in
            re.findall(r'\{\s*(-?\d+)\s*,\s*"([^"]*)"\s*\}', fmt[m.end():i])}


def tp_format(category, event):
    """The tracepoint CATEGORY:EVENT as the running kernel describes it in
    TRACEFS/events/CATEGORY/EVENT/format: ({field: (offset, size)},
    print fmt). Raises ToolError when the kernel has no such tracepoint."""
    path = f"{TRACEFS}/events/{category}/{event}/format"
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ToolError(f"no tracepoint {category}:{event} ({path}: "
                        f"{e.strerror})") from None
    fields = {}
    for m in re.finditer(r"field:([^;]*);\s*offset:(\d+);\s*size:(\d+);",
                         text):
        name = re.sub(r"\[.*\]", "", m.group(1)).split()[-1].lstrip("*")
        fields[name] = (int(m.group(2)), int(m.group(3)))
    fmt = text[text.find("print fmt:"):]
    return fields, fmt


def tp_symbols(category, event, field):
    """{value: name} that TRACEFS prints for FIELD of CATEGORY:EVENT (its
    __print_symbolic table): the kernel's own names, e.g. the drop
    reasons of skb:kfree_skb."""
    return _symbolic(tp_format(category, event)[1], field)


def tp_defines(prefix, category, event, *names):
    """-D PREFIX_FIELD=offset for each field NAME of CATEGORY:EVENT, for a
    BPF program that reads the record at those offsets. Raises ToolError
    when a field is missing (a kernel whose tracepoint changed)."""
    fields, _ = tp_format(category, event)
    out = []
    for n in names:
        if n not in fields:
            raise ToolError(f"tracepoint {category}:{event} has no field "
                            f"'{n}' on this kernel")
        out.append(f"-D{prefix}_{n.upper()}={fields[n][0]}")
    return out


# --------------------------------------------------------- namespaces --
class Netns:
    """The network namespace a tool looks at: its own (PATH None), or
    --netns NAME (/run/netns/NAME) or PATH (/proc/PID/ns/net)."""

    def __init__(self, arg=None):
        self.path = None
        if arg:
            self.path = arg if "/" in arg else f"/run/netns/{arg}"
            if not os.path.exists(self.path):
                raise ToolError(f"no network namespace {arg} ({self.path} "
                                "does not exist)")

    def cmd(self, *args):
        """ARGS as a command run in the namespace (nsenter: only the
        network namespace changes, as nfslice allows)."""
        pre = ["nsenter", f"--net={self.path}"] if self.path else []
        return pre + [str(a) for a in args]

    def cookie(self):
        """The namespace's netns cookie (SO_NETNS_COOKIE of a socket made
        in it): what its net devices' struct net carries as net_cookie,
        and what names nfslice's pin directory ns<cookie>."""
        if not self.path:
            return _socket_cookie()
        libc = ctypes.CDLL(None, use_errno=True)
        here = os.open("/proc/self/ns/net", os.O_RDONLY)
        there = os.open(self.path, os.O_RDONLY)
        try:
            if libc.setns(there, CLONE_NEWNET) != 0:
                raise ToolError(f"cannot enter {self.path}: "
                                f"{os.strerror(ctypes.get_errno())}")
            try:
                return _socket_cookie()
            finally:
                if libc.setns(here, CLONE_NEWNET) != 0:
                    raise ToolError("cannot return to the tool's network "
                                    "namespace")
        finally:
            os.close(here)
            os.close(there)

    def describe(self):
        return self.path or "this network namespace"


def _socket_cookie():
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        return struct.unpack("Q", s.getsockopt(socket.SOL_SOCKET,
                                               SO_NETNS_COOKIE, 8))[0]


def links(ns):
    """{ifname: `ip -j -s link` object} of namespace NS (ifindex, xdp,
    stats64 rx/tx packets and bytes)."""
    cp = subprocess.run(ns.cmd("ip", "-j", "-s", "link", "show"),
                        capture_output=True, text=True, timeout=30)
    if cp.returncode != 0:
        raise ToolError(f"ip link show in {ns.describe()}: "
                        f"{cp.stderr.strip()}")
    return {o["ifname"]: o for o in json.loads(cp.stdout or "[]")}


def xdp_prog_id(link):
    """Id of the XDP program attached to LINK (an `ip -j link` object),
    None without one."""
    return ((link.get("xdp") or {}).get("prog") or {}).get("id")


# ------------------------------------------------------------ nfslice --
def find_nfslice():
    """The nfslice CLI: $NFSLICE; build/nfslice when run from the source
    tree; nfslice beside the command as invoked (make install puts the
    tools' links beside it); else nfslice on PATH."""
    env = os.environ.get("NFSLICE")
    if env:
        return env
    for cand in (ROOT / "build" / "nfslice",
                 Path(sys.argv[0]).absolute().parent / "nfslice"):
        if os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which("nfslice") or "nfslice"


def nfslice_json(ns, *args, timeout=60):
    """`nfslice ARGS --json` in NS, parsed. Raises ToolError with
    nfslice's own message (the {"error": ...} object) on failure."""
    cmd = ns.cmd(find_nfslice(), *args, "--json")
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True,
                            timeout=timeout)
    except OSError as e:
        raise ToolError(f"{cmd[0]}: {e.strerror} (build it with make, "
                        "or set NFSLICE)") from None
    try:
        obj = json.loads(cp.stdout)
    except ValueError:
        obj = None
    if cp.returncode not in (0, 3) or not isinstance(obj, dict) or \
            "error" in obj:
        err = obj.get("error") if isinstance(obj, dict) else None
        err = err or cp.stderr.strip() or f"exit {cp.returncode}"
        raise ToolError(f"nfslice {args[0]}: {err}")
    return obj


def domain_ifaces(ns, name):
    """{ifindex: (ifname, nf_port)} of domain NAME's present interfaces
    (slicing ones and NF ports), from `nfslice status --json` in NS."""
    st = nfslice_json(ns, "status", "--name", name)
    return {i["ifindex"]: (i["name"], bool(i.get("nf_port")))
            for i in st.get("interfaces", []) if i.get("present", True)}


def watched(ns, name, extra, tool):
    """The interfaces a tool watches: domain NAME's and the names in EXTRA,
    in NS. Returns ({ifindex: ifname}, the set of those that are NF ports,
    {ifname: `ip -j link` object of NS}). A missing domain with EXTRA
    given is a note; without, an error."""
    lk = links(ns)
    out, nf_ports = {}, set()
    try:
        for idx, (ifname, nf) in domain_ifaces(ns, name).items():
            out[idx] = ifname
            if nf:
                nf_ports.add(idx)
    except ToolError as e:
        if not extra:
            raise
        note(tool, f"{e}: watching only {', '.join(extra)}")
    for ifname in extra:
        if ifname not in lk:
            raise ToolError(f"no interface {ifname} in {ns.describe()}")
        out[lk[ifname]["ifindex"]] = ifname
    if not out:
        raise ToolError(f"domain '{name}' has no interface present")
    return out, nf_ports, lk


# --------------------------------------------------------------- bcc --
def btf_defines(btf, **paths):
    """-D NAME=offset for each NAME=path ("sk_buff.dev") from BTF."""
    return [f"-D{k}={btf.offset(v)}" for k, v in paths.items()]


def load_bpf(text, cflags):
    """Compile TEXT with bcc; the BPF object. Raises ToolError naming the
    fix when bcc is missing or cannot find kernel headers."""
    try:
        from bcc import BPF
    except ImportError as e:
        raise ToolError(f"bcc is not importable ({e}): install "
                        "python3-bpfcc (scripts/install-deps.sh) and run "
                        "with /usr/bin/python3") from None
    build = Path(f"/lib/modules/{os.uname().release}/build")
    if not build.exists():
        raise ToolError(f"no kernel headers for bcc: {build} is missing; "
                        "scripts/install-deps.sh links Debian's "
                        "linux-headers there (docs/platform.md)")
    try:
        return BPF(text=text, cflags=cflags)
    except Exception as e:      # bcc raises bare Exception on a failed load
        raise ToolError(f"bcc could not compile or load the program: "
                        f"{e}") from None


def mono_to_wall(ts_ns):
    """CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns) as Unix time, s."""
    return time.time() - (time.monotonic_ns() - ts_ns) / 1e9


def clock(ts):
    """Unix time TS as HH:MM:SS.ffffff, local time."""
    return time.strftime("%H:%M:%S", time.localtime(ts)) + \
        f".{int(ts % 1 * 1e6):06d}"


# -------------------------------------------------- man, completion --
def _roff(s):
    return s.replace("\\", "\\\\").replace("-", "\\-")


def version():
    """nfslice's version line ("nfslice 0.1.0 (git ...)"), "" if none."""
    try:
        cp = subprocess.run([find_nfslice(), "--version"],
                            capture_output=True, text=True, timeout=10)
        return cp.stdout.strip()
    except OSError:
        return ""


def man_page(parser, summary, see_also):
    """PARSER as a section 8 man page (troff), as `--man` of the C tools
    makes theirs."""
    prog = parser.prog
    out = [f".\\\" Generated from the option table by '{prog} --man': "
           "do not edit.",
           f'.TH "{prog.upper()}" 8 "" "{version()}" '
           '"System Administration"', ".ad l", ".nh", ".SH NAME",
           _roff(prog), f"\\- {_roff(summary)}", ".SH SYNOPSIS",
           f".B {_roff(prog)}", "[\\fIOPTIONS\\fR]", ".SH DESCRIPTION"]
    for para in (parser.description or "").strip().split("\n\n"):
        out += [_roff(" ".join(para.split())), ".PP"]
    out[-1:] = [".SH OPTIONS"]
    for a in parser._actions:
        if a.help == argparse.SUPPRESS:
            continue
        flags = ", ".join(f"\\fB{_roff(o)}\\fR" for o in a.option_strings)
        if a.metavar or (a.nargs != 0 and a.option_strings):
            meta = a.metavar or a.dest.upper()
            flags += f" \\fI{_roff(meta)}\\fR"
        out += [".TP", flags, _roff(a.help % vars(a) if "%(" in a.help
                                    else a.help)]
    for para in (parser.epilog or "").strip().split("\n\n"):
        head, _, body = para.partition("\n")
        if head.endswith(":") and body:
            out += [f".SH {head[:-1].upper()}", _roff(" ".join(body.split()))]
        else:
            out += [".PP", _roff(" ".join(para.split()))]
    out += [".SH SEE ALSO", _roff(see_also)]
    return "\n".join(out) + "\n"


def bash_completion(parser):
    """A bash completion script for PARSER (options; interface names for
    --iface)."""
    prog = parser.prog
    fn = "_" + re.sub(r"\W", "_", prog)
    opts, valued = [], []
    for a in parser._actions:
        if a.help == argparse.SUPPRESS:
            continue
        long = [o for o in a.option_strings if o.startswith("--")]
        opts += long
        if a.nargs != 0:
            valued += long
    return (f"# bash completion for {prog}\n"
            f"# Generated from the option table by '{prog} "
            "--bash-completion': do not edit.\n"
            f"{fn}()\n{{\n"
            "\tlocal cur=${COMP_WORDS[COMP_CWORD]} "
            "prev=${COMP_WORDS[COMP_CWORD-1]}\n\n"
            "\tCOMPREPLY=()\n\tcase $prev in\n"
            "\t--iface)\n\t\tCOMPREPLY=($(compgen -W \"$(ls /sys/class/net "
            "2>/dev/null)\" -- \"$cur\"))\n\t\treturn ;;\n"
            "\t--netns)\n\t\tCOMPREPLY=($(compgen -W \"$(ls /run/netns "
            "2>/dev/null)\" -- \"$cur\"))\n\t\treturn ;;\n"
            f"\t{'|'.join(valued) or '--'})\n\t\treturn ;;\n\tesac\n"
            f"\tCOMPREPLY=($(compgen -W \"{' '.join(opts)}\" -- \"$cur\"))\n"
            f"}}\ncomplete -F {fn} {prog}\n")


def add_doc_options(parser):
    """The hidden --man and --bash-completion, and --version."""
    parser.add_argument("--man", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bash-completion", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--version", action="store_true",
                        help="show the version (nfslice's) and exit")


def doc_option(parser, args, summary, see_also):
    """Handle --man, --bash-completion and --version; True when one was
    given (the tool then exits 0)."""
    if args.man:
        sys.stdout.write(man_page(parser, summary, see_also))
    elif args.bash_completion:
        sys.stdout.write(bash_completion(parser))
    elif args.version:
        print(f"{parser.prog} (bcc) {version() or 'nfslice version unknown'}")
    else:
        return False
    return True
