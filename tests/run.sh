#!/bin/sh
# tests/run.sh - run the C unit tests and the busted specs; end with one line
# "N passed, N failed, N skipped" that counts both. Exit status 1 if anything failed.
# The busted specs run with PERFSH_BACKEND=ptrace. The sampling tests run once more with each
# of PERFSH_SAMPLING=uprobe and int3 (the ways to count entries where hardware breakpoints do
# not fire), and the region specs that do not count stops or need what only ptrace does once
# more with PERFSH_BACKEND=uprobe (where the uprobe PMU cannot be opened, each of those specs
# counts skipped, with the reason).
# PERFSH: the perfsh executable to run the specs in (default ./perfsh); B: the build dir.
set -u
cd "$(dirname "$0")/.."
PERFSH=${PERFSH:-./perfsh}
B=${B:-build}
export PERFSH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
c_pass=0 c_fail=0 c_skip=0 l_pass=0 l_fail=0 l_skip=0
busted_bin=$(command -v busted)

# c_run OUT [FILTER]: the C runner's output into OUT, its counts added
c_run() {
	"$B/tests/c/run" ${2:+"$2"} >"$1" 2>&1
	crc=$?
	cat "$1"
	c_line=$(grep -E '^c: [0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	if [ -z "$c_line" ]; then
		echo "the C test runner stopped without its summary (exit $crc)"
		c_fail=$((c_fail + 1))
		return
	fi
	c_pass=$((c_pass + $(echo "$c_line" | sed -n 's/^c: \([0-9]*\) passed.*/\1/p')))
	c_fail=$((c_fail + $(echo "$c_line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')))
	c_skip=$((c_skip + $(echo "$c_line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')))
}

# l_run OUT SPECS: busted's TAP output into OUT, its counts added
l_run() {
	if [ -z "$busted_bin" ]; then
		echo "busted is not installed (make deps installs lua-busted)"
		l_fail=$((l_fail + 1))
		return
	fi
	"$PERFSH" "$busted_bin" -o TAP "$2" >"$1" 2>&1
	lrc=$?
	cat "$1"
	skip=$(grep -c '^ok [0-9]* - # SKIP' "$1")
	l_skip=$((l_skip + skip))
	l_pass=$((l_pass + $(grep -c '^ok [0-9]*' "$1") - skip))
	l_fail=$((l_fail + $(grep -c '^not ok [0-9]*' "$1")))
	if ! grep -q '^1\.\.[0-9]' "$1"; then
		echo "busted stopped without its plan line (exit $lrc)"
		l_fail=$((l_fail + 1))
	fi
}

echo "== C unit tests ($B/tests/c/run)"
c_run "$tmp/c.out"
# The first pass names the ptrace catcher (PERFSH_BACKEND=ptrace): the default, auto, takes the
# uprobe catcher where it works, and the region specs run under it in a pass of their own below;
# the specs of the default itself unset the variable.
echo "== busted specs (run inside $PERFSH, PERFSH_BACKEND=ptrace)"
export PERFSH_BACKEND=ptrace
l_run "$tmp/l.out" tests/
unset PERFSH_BACKEND
for m in uprobe int3; do
	echo "== sampling tests with PERFSH_SAMPLING=$m (the ptrace catcher's ways)"
	export PERFSH_SAMPLING=$m PERFSH_BACKEND=ptrace
	c_run "$tmp/c-$m.out" session_sampling_counts
	l_run "$tmp/l-$m.out" tests/08-sampling_spec.lua
done
unset PERFSH_SAMPLING PERFSH_BACKEND
# Not in this pass: 06 (two of its tests pin ptrace's ways: time_ns equals task-clock's time,
# an IFUNC is dropped at the run; its tests of the uprobe catcher name it). 07 (-g groups), 10
# and 12 are in it: several counter groups, saved files and their reports, and C++ exceptions
# through regions, under either catcher; so is 13: signals and deadlines must end a run of
# either catcher promptly, with what was measured printed and saved.
echo "== region specs with PERFSH_BACKEND=uprobe"
backend_specs="tests/07-stat_spec.lua tests/08-sampling_spec.lua tests/10-analysis_spec.lua tests/12-exceptions_spec.lua tests/13-signals_spec.lua
tests/16-loops_spec.lua tests/17-sdt_spec.lua tests/18-backend_spec.lua"
if why=$("$PERFSH" -e 'local ok, why = require("perfsh.core").uprobe_available() io.write(ok and "" or why)') &&
	[ -z "$why" ]; then
	export PERFSH_BACKEND=uprobe
	for spec in $backend_specs; do
		l_run "$tmp/l-backend.out" "$spec"
	done
	unset PERFSH_BACKEND
else
	# not run is not passed: each spec of the pass counts skipped, with the reason
	for spec in $backend_specs; do
		echo "skip $spec with PERFSH_BACKEND=uprobe: the uprobe catcher cannot work here: ${why:-perfsh did not start}"
		l_skip=$((l_skip + 1))
	done
fi

# Each fuzz target's corpus (tests/fuzz/corpus/NAME/, crashes found before included) replayed
# through a build of the target without libFuzzer: one test per target.
echo "== fuzz corpora ($B/tests/fuzz/replay_*)"
f_pass=0 f_fail=0
for src in tests/fuzz/fuzz_*.c; do
	[ -e "$src" ] || continue
	name=${src#tests/fuzz/fuzz_}
	name=${name%.c}
	if [ ! -x "$B/tests/fuzz/replay_$name" ]; then
		echo "not ok fuzz $name: $B/tests/fuzz/replay_$name is not built (make check builds it)"
		f_fail=$((f_fail + 1))
	elif [ ! -d "tests/fuzz/corpus/$name" ]; then
		echo "not ok fuzz $name: no corpus tests/fuzz/corpus/$name/"
		f_fail=$((f_fail + 1))
	elif "$B/tests/fuzz/replay_$name" "tests/fuzz/corpus/$name" >"$tmp/f.out" 2>&1; then
		echo "ok fuzz $name: $(tail -n 1 "$tmp/f.out")"
		f_pass=$((f_pass + 1))
	else
		echo "not ok fuzz $name (the last input replayed caused it):"
		tail -n 40 "$tmp/f.out"
		f_fail=$((f_fail + 1))
	fi
done

pass=$((c_pass + l_pass + f_pass))
fail=$((c_fail + l_fail + f_fail))
skip=$((c_skip + l_skip))
echo "C: $c_pass passed, $c_fail failed, $c_skip skipped; busted: $l_pass passed, $l_fail failed, $l_skip skipped"
echo "fuzz corpora: $f_pass passed, $f_fail failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
