#!/usr/bin/env bash
# tools/clean_clone_ci.sh a|b [--load]: .ci/run on a clean clone of this repository, as issue 39 asks.
# Clone, caches and venv go under $CLEAN_CI_DIR/MODE (default /tmp/simul-clean-ci), the log and a summary (rc,
# wall time, bytes received on the network interface, cache and venv sizes, load average) under
# $CLEAN_CI_RECORDS/ci-MODE (default the same folder).
#  b: as CI runs it (the machine's pip sources: PIP_FIND_LINKS=/opt/wheels, pip.conf), with a fresh pip cache and a
#     fresh simul/model cache, no venv.
#  a: as a new user: PIP_FIND_LINKS unset and an empty HOME (so no ~/.config/pip/pip.conf), fresh caches: the public
#     index only.
# The network figure counts everything the machine received meanwhile, not pip alone.
# --load: two `while 1: pass` processes for the run's whole duration.
set -u
mode=${1:-}; load=${2:-}
case "$mode" in a|b) ;; *) echo "usage: tools/clean_clone_ci.sh a|b [--load]" >&2; exit 2 ;; esac
case "$load" in ""|--load) ;; *) echo "unknown option $load (only --load)" >&2; exit 2 ;; esac
repo=$(cd "$(dirname "$0")/.." && pwd)
base=${CLEAN_CI_DIR:-/tmp/simul-clean-ci}
d=$base/$mode; rm -rf "$d"; mkdir -p "$d/home"
rec=${CLEAN_CI_RECORDS:-$base}/ci-$mode; mkdir -p "$rec"; : > "$rec/summary"
git clone -q "$repo" "$d/clone"
( cd "$d/clone" && git log --oneline -1 ) >> "$rec/summary"
export PIP_CACHE_DIR=$d/pipcache XDG_CACHE_HOME=$d/xdgcache
unset SIMUL_CACHE_DIR
pids=()
if [ "$load" = --load ]; then
  for i in 1 2; do python3 -c 'while 1: pass' & pids+=($!); done
  echo "load: two busy loops ${pids[*]}" >> "$rec/summary"
fi
rx0=$(python3 -c 'import re; print(sum(int(l.split(":",1)[1].split()[0]) for l in open("/proc/net/dev") if re.match(r"\s*(eth|ens|enp)", l)))')
( while sleep 60; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; done ) > "$rec/loadavg.log" & lp=$!
t0=$(date +%s); echo "start $(date -u +%T)" >> "$rec/summary"
cd "$d/clone"
if [ "$mode" = a ]; then
  env -u PIP_FIND_LINKS HOME="$d/home" ./.ci/run > "$rec/ci.log" 2>&1; rc=$?
else
  ./.ci/run > "$rec/ci.log" 2>&1; rc=$?
fi
t1=$(date +%s)
rx1=$(python3 -c 'import re; print(sum(int(l.split(":",1)[1].split()[0]) for l in open("/proc/net/dev") if re.match(r"\s*(eth|ens|enp)", l)))')
kill $lp "${pids[@]}" 2>/dev/null
{
  echo "end $(date -u +%T) rc=$rc wall=$((t1-t0))s"
  echo "received bytes on the network interface: $((rx1-rx0))"
  echo "pip cache: $(du -sb "$PIP_CACHE_DIR" 2>/dev/null | cut -f1) bytes"
  echo "xdg cache (simul wheels, models): $(du -sb "$XDG_CACHE_HOME" 2>/dev/null | cut -f1) bytes"
  echo "venv: $(du -sb .venv 2>/dev/null | cut -f1) bytes"
  echo "loadavg at end: $(cat /proc/loadavg)"
  grep -E "passed|failed" "$rec/ci.log" | tail -2
} >> "$rec/summary"
