#!/bin/bash
# The issue's pass-cost probe on the 1.5B with the wheel's libggml-cpu of simul-exact/6 ("old") and of
# simul-exact/7 ("new", attention by K/V head), processes taking turns, libggml-cpu.so swapped in the venv
# between them (OLD.so: the wheel `make setup` built from the simul-exact/6 patch; NEW.so: from simul-exact/7).
# Usage: probe-ab.sh ROUNDS OLD.so NEW.so [--seqs S] > probe-ab.raw
D=$(cd "$(dirname "$0")" && pwd)
cd "$D/../../.."
M=$(.venv/bin/simul models path qwen2.5-coder-1.5b)
L=.venv/lib/python3.11/site-packages/llama_cpp/lib
rounds=$1 old=$2 new=$3; shift 3
swap() { for f in libggml-cpu.so libggml-cpu.so.0 libggml-cpu.so.0.25.3; do rm -f $L/$f; cp "$1" $L/$f; done; }
for r in $(seq "$rounds"); do
  for v in old new; do
    if [ $v = old ]; then swap "$old"; else swap "$new"; fi
    echo "== round $r, $v ($(date -u +%H:%M:%S), $(cut -d' ' -f1-3 /proc/loadavg))"
    GGML_CPU_EXACT=${EXACT:-1} /usr/bin/time -f "wall %e s, user %U s, sys %S s, CPU %P" .venv/bin/python ../shared/probes/pass_cost.py "$M" --threads 2 "$@" 2>&1 | grep "^exact=\|^n=\|^numpy\|^wall"
  done
done
swap "$new"
