#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A/B of the datapath cost (issue 19 item 5): build two commits and run
# their build/nfslice-bench-datapath interleaved in one run, then print
# per-row ratios NEW/OLD (bench/ab_report.py). Usage: bench/ab.sh --help.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
me=bench/ab.sh
pairs=6
lock=1
outdir=
lockfile=${NFSL_RIG_LOCK:-/tmp/nfslice-rig.lock}

usage() {
	cat <<EOF
Usage: $me [OPTIONS] OLD NEW [-- DRIVER-ARGS...]
       make ab OLD=REV NEW=REV [PAIRS=N] [ARGS='DRIVER-ARGS']

Build commits OLD and NEW (any git revision: sha, tag, branch) and compare
their datapath cost. Each is checked out in a temporary git worktree under
build/ab/ and built with 'make bench-build'; its build/nfslice-bench-datapath
is kept in build/ab/bin/SHA/ (a later run reuses it) and the worktree is
removed, also on failure or interrupt. Then PAIRS pairs of runs of the two
drivers with the same DRIVER-ARGS, alternating (pair 1 OLD first, pair 2
NEW first, ...), so that load on the machine falls on both alike.

Printed per row (frame size x proto x program, the rows of
docs/benchmarks.md): OLD and NEW ns/packet (net of the empty program,
median over the runs), NEW/OLD as the median of the per-pair ratios with
their min..max, 'slower'/'faster' when every pair's ratio is on the same
side of 1.00 (moved beyond the pair-to-pair noise; an unchanged row does
so by chance with p = 2/2^PAIRS; below 6 pairs, p > 0.05, it is marked
'slower?'/'faster?') and, for rows with a baseline, the
within-run ratio to it (e.g. slicer x xdp-copy-cold), OLD -> NEW.

Options:
  -n, --pairs N   pairs of runs (default 6; 2..100)
  -o, --out DIR   keep each run's CSV, stdout and the report in DIR
      --no-lock   do not take $lockfile (the caller
                  holds it already, e.g. flock $lockfile $me ...)
  -h, --help      this text

The script takes the machine's rig lock ($lockfile, or \$NFSL_RIG_LOCK)
itself, for the run phase only (not while building): do not wrap it in
flock yourself unless you pass --no-lock, or it waits for itself forever.
DRIVER-ARGS go to every run (build/nfslice-bench-datapath --help), e.g.
-s 64,1514 -p udp -P slicer,splicer -r 21; --json, --csv and --quiet are
the script's own. A run of the default driver arguments takes ~20-40 s per
driver here; narrow it with -s/-p/-P.

Example: $me 235d029 44c8caf -- -s 1514 -p udp -P slicer,xdp-copy-cold -r 21

Needs root for the run phase (BPF_PROG_TEST_RUN). Exit status: 0 the
comparison ran and was printed (whether or not rows moved), 1 a build or a
run failed (its log is named), 2 usage (bad option, unknown revision,
DRIVER-ARGS the driver refuses: found at the first run, after building).
EOF
}

die_usage() {
	echo "$me: $*" >&2
	echo "$me: see $me --help" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	-n | --pairs)
		[ $# -ge 2 ] || die_usage "$1 needs a number of pairs (2..100)"
		[[ $2 =~ ^[1-9][0-9]*$ ]] && [ "$2" -ge 2 ] && [ "$2" -le 100 ] ||
			die_usage "$1 '$2': give a number of pairs in 2..100"
		pairs=$2
		shift 2
		;;
	-o | --out)
		[ $# -ge 2 ] || die_usage "$1 needs a directory"
		outdir=$2
		shift 2
		;;
	--no-lock)
		lock=0
		shift
		;;
	--)
		break
		;;
	-*)
		die_usage "unknown option '$1'"
		;;
	*)
		break
		;;
	esac
done

[ $# -ge 2 ] && [ "$1" != -- ] && [ "$2" != -- ] ||
	die_usage "give two revisions: $me OLD NEW [-- DRIVER-ARGS] (make ab OLD=REV NEW=REV)"
old_rev=$1
new_rev=$2
shift 2
if [ $# -gt 0 ]; then
	[ "$1" = -- ] || die_usage "'$1' after OLD NEW: driver arguments go after '--'"
	shift
fi
args=("$@")
for a in "${args[@]}"; do
	case $a in
	-j | --json | --json=* | -C | --csv | --csv=* | -q | --quiet | -h | --help)
		die_usage "driver argument '$a' is the script's own: leave it out"
		;;
	esac
done

# Full shas; a revision git does not know is a usage error naming the fix.
resolve() {
	local what=$1 rev=$2 sha
	sha=$(git -C "$root" rev-parse -q --verify "$rev^{commit}" 2>/dev/null) ||
		die_usage "$what '$rev' is not a commit of $root: give a sha, tag or branch (git log --oneline)"
	echo "$sha"
}
old=$(resolve OLD "$old_rev")
new=$(resolve NEW "$new_rev")
short() { git -C "$root" rev-parse --short "$1"; }
old_s=$(short "$old")
new_s=$(short "$new")

if [ "$(id -u)" -ne 0 ]; then
	echo "$me: needs root (BPF_PROG_TEST_RUN, bpf_enable_stats): run it with sudo" >&2
	exit 1
fi

abdir=$root/build/ab
mkdir -p "$abdir"
work=$(mktemp -d "$abdir/run.XXXXXX")
worktrees=()
cleanup() {
	local wt
	for wt in "${worktrees[@]}"; do
		git -C "$root" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
	done
	git -C "$root" worktree prune 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# build SHA: the driver of commit SHA in build/ab/bin/SHA/, built once.
build() {
	local sha=$1 s bin wt log
	s=$(short "$sha")
	bin=$abdir/bin/$sha/nfslice-bench-datapath
	if [ -x "$bin" ]; then
		echo "$me: $s: reusing $bin" >&2
		return 0
	fi
	wt=$work/wt-$s
	log=$abdir/build-$s.log
	echo "$me: $s: building (make bench-build in a worktree, log $log)" >&2
	worktrees+=("$wt")
	if ! git -C "$root" worktree add -q --detach "$wt" "$sha" >"$log" 2>&1 ||
		! make -C "$wt" -j"$(nproc)" bench-build >>"$log" 2>&1 ||
		[ ! -x "$wt/build/nfslice-bench-datapath" ]; then
		tail -n 15 "$log" >&2
		echo "$me: commit $s ($sha) does not build (make bench-build; log $log):" \
			"pick a commit that builds, or fix the build errors above (a commit from" \
			"before the datapath driver has no build/nfslice-bench-datapath)" >&2
		exit 1
	fi
	mkdir -p "${bin%/*}"
	cp "$wt/build/nfslice-bench-datapath" "$bin.tmp.$$"
	mv "$bin.tmp.$$" "$bin"
	git -C "$root" worktree remove --force "$wt"
}
build "$old"
build "$new"

# run SIDE I: one driver run; its CSV and output under $work.
run() {
	local side=$1 i=$2 sha bin t0 rc
	[ "$side" = old ] && sha=$old || sha=$new
	bin=$abdir/bin/$sha/nfslice-bench-datapath
	t0=$SECONDS
	"$bin" --quiet --csv "$work/$side-$i.csv" "${args[@]}" >"$work/$side-$i.out" 2>&1 || {
		rc=$?
		cat "$work/$side-$i.out" >&2
		[ -n "$outdir" ] && mkdir -p "$outdir" && cp "$work/$side-$i.out" "$outdir/"
		if [ $rc = 2 ]; then
			# the driver's own usage error: the arguments, not the run
			echo "$me: the $(echo "$side" | tr a-z A-Z) driver ($(short "$sha")) refused" \
				"DRIVER-ARGS '${args[*]}' (message above): fix them, see $bin --help" >&2
			exit 2
		fi
		echo "$me: the $(echo "$side" | tr a-z A-Z) driver ($(short "$sha")) failed in pair $i" \
			"(exit $rc): see its message above" >&2
		exit 1
	}
	echo "$me: pair $i/$pairs: $(echo "$side" | tr a-z A-Z) $(short "$sha") $((SECONDS - t0)) s" >&2
}

runs() {
	local i
	for ((i = 1; i <= pairs; i++)); do
		if ((i % 2)); then
			run old "$i"
			run new "$i"
		else
			run new "$i"
			run old "$i"
		fi
	done
}

if [ "$lock" = 1 ]; then
	echo "$me: waiting for $lockfile" >&2
	exec 9>"$lockfile"
	t0=$SECONDS
	flock 9
	echo "$me: got the lock after $((SECONDS - t0)) s" >&2
	t0=$SECONDS
	runs
	flock -u 9
	exec 9>&-
else
	t0=$SECONDS
	runs
fi
echo "$me: $pairs pairs in $((SECONDS - t0)) s: build/nfslice-bench-datapath ${args[*]}"

files=()
for ((i = 1; i <= pairs; i++)); do
	files+=("$work/old-$i.csv" "$work/new-$i.csv")
done
report=$work/report.txt
/usr/bin/python3 "$root/bench/ab_report.py" --labels "$old_s,$new_s" "${files[@]}" >"$report"
cat "$report"
if [ -n "$outdir" ]; then
	mkdir -p "$outdir"
	cp "$work"/*.csv "$work"/*.out "$report" "$outdir/"
	echo "$me: runs and report in $outdir"
fi
