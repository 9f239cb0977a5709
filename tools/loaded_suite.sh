#!/usr/bin/env bash
# loaded_suite.sh N [PYTEST ARGS...]: the test suite N times, one run after another, beside two `while 1: pass`
# processes that hold the cores for the whole time (issue 39: tests that fail only under load). Runs in the
# current checkout's .venv (make setup first). Each run prints every test's outcome as it ends (-v), so a run
# stopped early still says which tests failed, and writes a JUnit file with every test's duration.
#   LOADED_DIR    where the logs go (default: /tmp/simul-loaded)
#   LOADED_BUSY   how many busy loops (default 2)
# Example, the fast set three times: tools/loaded_suite.sh 3 -m "not slow"
set -u
N=${1:?usage: tools/loaded_suite.sh N [pytest args...]}; shift
case $N in ''|*[!0-9]*) echo "loaded_suite.sh: N must be a whole number, got '$N'" >&2; exit 2;; esac
[ -x .venv/bin/python ] || { echo "loaded_suite.sh: no .venv here; run make setup first" >&2; exit 2; }
out=${LOADED_DIR:-/tmp/simul-loaded}; busy=${LOADED_BUSY:-2}; mkdir -p "$out"; : > "$out/summary"
pids=(); for _ in $(seq 1 "$busy"); do python3 -c 'while 1: pass' & pids+=($!); done
( while sleep 30; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; done ) > "$out/loadavg.log" & pids+=($!)
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
echo "$(git log --oneline -1 | cut -c1-72); $busy busy loops from $(date -u +%T); pytest args: $*" >> "$out/summary"
sleep 60  # so that the load average, which simul reads when it chooses how threads wait, shows the load
for i in $(seq 1 "$N"); do
  t0=$(date +%s); s0=$(date -u +%T)
  .venv/bin/python -m pytest -v -p no:cacheprovider --durations=40 --junitxml="$out/run$i.xml" "$@" > "$out/run$i.log" 2>&1
  rc=$?
  echo "run $i: $s0-$(date -u +%T) rc=$rc wall=$(( $(date +%s) - t0 ))s load $(cut -d' ' -f1-3 /proc/loadavg):" \
    "$(grep -E '(passed|failed)' "$out/run$i.log" | tail -1)" >> "$out/summary"
  grep -E " (FAILED|ERROR)" "$out/run$i.log" | sed 's/^/  /' >> "$out/summary"
done
cat "$out/summary"
