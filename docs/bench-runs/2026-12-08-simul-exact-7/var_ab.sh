#!/bin/bash
# variants of libggml-cpu taking turns on repeat_passes (exact, 2 threads): median ms of REPS passes of N rows
cd /work/main
M=$(.venv/bin/simul models path qwen2.5-coder-1.5b)
L=.venv/lib/python3.11/site-packages/llama_cpp/lib
R=$1; N=$2; REPS=$3; shift 3
cp $L/libggml-cpu.so.0.25.3 /tmp/wheel-libggml-cpu.so
for r in $(seq $R); do for v in "$@"; do
  for f in libggml-cpu.so libggml-cpu.so.0 libggml-cpu.so.0.25.3; do rm -f $L/$f; cp /work/dev/libs/$v.so $L/$f; done
  echo "$r $v $(GGML_CPU_EXACT=1 .venv/bin/python docs/bench-runs/2026-12-07-intel-vnni/kernel-anatomy/repeat_passes.py $M $N $REPS 2>/dev/null | grep '^n=') load $(cut -d' ' -f1 /proc/loadavg)"
done; done
for f in libggml-cpu.so libggml-cpu.so.0 libggml-cpu.so.0.25.3; do rm -f $L/$f; cp /tmp/wheel-libggml-cpu.so $L/$f; done
