#!/bin/bash
# The issue's pass-cost probe on the 1.5B with the wheel's libggml-cpu of simul-exact/5 ("old") and of
# simul-exact/6 ("new", the 16-row Q4_K form), processes taking turns, libggml-cpu.so swapped in the venv
# between them (the two builds: /work/dev/libs/{new,exact6}.so, built from the development tree with each patch).
# Usage: probe-ab.sh ROUNDS OLD.so NEW.so > probe-ab.txt
D=$(cd "$(dirname "$0")" && pwd)
cd "$D/../../.."
M=$(.venv/bin/simul models path qwen2.5-coder-1.5b)
L=.venv/lib/python3.11/site-packages/llama_cpp/lib
swap() { for f in libggml-cpu.so libggml-cpu.so.0 libggml-cpu.so.0.25.3; do rm -f $L/$f; cp "$1" $L/$f; done; }
for r in $(seq "$1"); do
  for v in old new; do
    if [ $v = old ]; then swap "$2"; else swap "$3"; fi
    echo "== round $r, $v ($(date -u +%H:%M:%S), $(cut -d' ' -f1-3 /proc/loadavg))"
    GGML_CPU_EXACT=1 /usr/bin/time -f "wall %e s, user %U s, sys %S s, CPU %P" .venv/bin/python ../shared/probes/pass_cost.py "$M" --threads 2 2>&1 | grep -v "^llama\|^load\|^print_info\|^\.\|^ggml\|^common\|^init\|^graph\|^sched\|^set_\|^llm\|^model\|^gguf\|^clip"
  done
done
swap "$3"
