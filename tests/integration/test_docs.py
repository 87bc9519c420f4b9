# SPDX-License-Identifier: GPL-2.0
"""What the docs state that the code decides (issue 17 §4): the counter
lists of docs/cli.md and docs/format.md against the X-macros of
include/nfsl_structs.h, and the drop event ring's record count against
NFSL_EVENTS_BYTES and struct nfsl_event; and that the docs hold together
(issue 18 §5): every relative link of README.md and docs/*.md reaches a
file and, with #anchor, a heading of it; README.md stays short. No rig:
text and a compiler.
"""
import re
import subprocess

from nfsl.rig import COUNTERS, MGR_COUNTERS, ROOT

STRUCTS = ROOT / "include" / "nfsl_structs.h"


def xmacro(name):
    """The names listed by X-macro NAME of include/nfsl_structs.h, in
    order."""
    text = STRUCTS.read_text()
    m = re.search(rf"#define {name}\(X\)(.*?)\n\n", text, re.S)
    assert m, name
    return re.findall(r"\bX\((\w+)\)", m.group(1))


def test_cli_counter_list_is_the_code():
    """docs/cli.md's "Counters (`stats`)" paragraph (README's until issue
    18) names every datapath counter, then every TTL scan counter, in the
    order stats prints them (it lacked events_lost and skipped_csum)."""
    text = (ROOT / "docs" / "cli.md").read_text()
    para = text.split("Counters (`stats`): ", 1)[1].split("Their meaning", 1)[0]
    datapath, _, rest = para.partition("then the TTL scan's")
    mgr = rest.partition("plus")[0]
    assert re.findall(r"`(\w+)`", datapath) == xmacro("NFSL_COUNTERS")
    assert re.findall(r"`(\w+)`", mgr) == xmacro("NFSL_MGR_COUNTERS")


def test_format_counter_tables_are_the_code():
    """docs/format.md's counter tables, and the tests' own lists, are the
    X-macros."""
    text = (ROOT / "docs" / "format.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \|", text.split("## Counters", 1)[1]
                      .split("\n## ", 1)[0], re.M)
    assert rows == xmacro("NFSL_COUNTERS") + xmacro("NFSL_MGR_COUNTERS")
    assert list(COUNTERS) == xmacro("NFSL_COUNTERS")
    assert list(MGR_COUNTERS) == xmacro("NFSL_MGR_COUNTERS")


def test_event_ring_size_is_the_code():
    """The ring's record count in the docs and in nfsl_consts.h is
    NFSL_EVENTS_BYTES / (sizeof(struct nfsl_event) + 8 B header, rounded
    to 8), as the kernel's ring buffer stores records (was: 4096 in the
    header's comment, 3640 in the docs)."""
    exe = ROOT / "build" / "test_event_size"    # tests/integration/c/
    size, ring = map(int, subprocess.run([exe], capture_output=True,
                                         text=True, check=True).stdout.split())
    records = ring // ((size + 8 + 7) // 8 * 8)
    fmt = (ROOT / "docs" / "format.md").read_text()
    assert (f"{ring // 1024} KiB: {records} records of {size} B + 8 B "
            "header") in fmt
    consts = (ROOT / "include" / "nfsl_consts.h").read_text()
    said = re.search(r"(\d+) events of (\d+) B \+ 8 B header", consts)
    assert said and (int(said[1]), int(said[2])) == (records, size), said


def test_readme_states_both_cost_ratios():
    """README states slicing's cost against no program and against a bare
    XDP_PASS, with the cause and the command and commit that measured it
    (it said "about 25%" where the demo showed 75-88% less)."""
    text = " ".join((ROOT / "README.md").read_text().split())
    assert "about 25%" not in text
    for needle in ("of the rig without any program",
                   "of the same rig with a bare XDP_PASS program",
                   "XDP turns TSO/GSO off on the peer and veth copies every "
                   "segment", "`bench/exp_iperf.py --runs 3 --offloads kernel "
                   "--dirs c2s --no-profile --duration 3` on commit",
                   "0.111x of no program and 0.751x of XDP_PASS",
                   "park topology behind a 100 Mbit/s link"):
        assert needle in text, needle
    platform = " ".join((ROOT / "docs" / "platform.md").read_text().split())
    assert "~0.93x with a bare XDP_PASS" not in platform
    assert "0.14-0.21x of no program with the kernel's offloads" in platform


def _pages():
    """README.md and every docs/*.md, as paths."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def _fenced_out(text):
    """The lines of TEXT outside ``` fences, code spans kept (headings
    keep their backticks' contents)."""
    fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence:
            yield line


def _prose(text):
    """The lines of markdown TEXT outside ``` fences, inline code spans
    blanked (a link inside code is an example, not one)."""
    for line in _fenced_out(text):
        yield re.sub(r"`[^`]*`", "``", line)


def _anchors(path):
    """The anchors GitHub gives the headings of PATH: lower case, every
    character but letters, digits, '_', '-' and ' ' dropped, spaces as
    '-', a repeated anchor suffixed -1, -2, ... (as github.com renders
    markdown)."""
    seen, out = {}, set()
    text = "\n".join(_fenced_out(path.read_text()))
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
        slug = slug.replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(pages):
    """Every relative markdown link [text](target) of PAGES whose file
    does not exist or whose #anchor is no heading of it, as
    (page, target) pairs; http(s) and mailto links are not checked."""
    bad = []
    for page in pages:
        for line in _prose(page.read_text()):
            for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)",
                                     line):
                if re.match(r"[a-z]+:", target):
                    continue
                file, _, anchor = target.partition("#")
                dest = (page.parent / file).resolve() if file else page
                if not dest.exists():
                    bad.append((page.name, target))
                elif anchor and dest.suffix == ".md" and \
                        anchor not in _anchors(dest):
                    bad.append((page.name, target))
    return bad


def test_every_doc_link_resolves():
    """Every relative link of README.md and docs/*.md reaches a file, and
    its #anchor a heading there (issue 18 §5: pages and sections moved,
    links must follow)."""
    assert broken_links(_pages()) == []


def test_link_check_finds_a_broken_link(tmp_path):
    """The check itself: a missing file, a missing anchor and a missing
    anchor of the page itself are reported; a good file, a good anchor
    (backticks and punctuation dropped, a repeat suffixed -1), a link in
    code and a web address are not."""
    (tmp_path / "b.md").write_text("# B\n## The `x` part (§1)\n## B\n")
    a = tmp_path / "a.md"
    a.write_text("# A\n[ok](b.md) [ok](b.md#the-x-part-1) [ok](b.md#b-1) "
                 "[ok](#a) [ok](https://example.com/x)\n"
                 "`[code](nowhere.md)`\n```\n[code](nowhere.md)\n```\n"
                 "[bad](c.md) [bad](b.md#nope) [bad](#nope)\n")
    assert broken_links([a]) == [("a.md", "c.md"), ("a.md", "b.md#nope"),
                                 ("a.md", "#nope")]


def test_readme_is_short_and_has_its_parts():
    """README.md is at most ~150 lines and has what issue 18 §5 asks of
    it: the two commands, a quick start, the layout, the docs index."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    for needle in ("make demo", "make test", "## Quick start", "## Layout",
                   "docs/README.md"):
        assert needle in text, needle
