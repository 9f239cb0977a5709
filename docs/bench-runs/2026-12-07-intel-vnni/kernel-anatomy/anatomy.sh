#!/bin/bash
# the kernel-anatomy measurements, one after another, nothing else running
D=$(cd "$(dirname "$0")" && pwd)
cd "$D/../../../.."
M=$(.venv/bin/simul models path qwen2.5-coder-1.5b)
{ date -u; uptime; } > $D/anatomy.load
gcc -O2 -march=native -fopenmp tools/roofline.c -o /tmp/roofline && /tmp/roofline 1024 7 > $D/roofline.txt 2>&1
{ date -u; uptime; } >> $D/anatomy.load
/usr/bin/time -f "wall %e s, user %U s, sys %S s, CPU %P" .venv/bin/python tools/column_kernels.py --rounds 60 > $D/column-kernels.txt 2>&1
{ date -u; uptime; } >> $D/anatomy.load
: > $D/profile.txt
for n in 1 8 16; do
  GGML_CPU_EXACT=1 perf record -q -D 4000 -e cpu-clock -F 4000 -o /tmp/anat$n.data .venv/bin/python $D/repeat_passes.py $M $n 150 2>/dev/null | grep "^n=" >> $D/profile.txt
  perf report -i /tmp/anat$n.data --no-children --sort symbol 2>/dev/null | grep -v "^#" | grep "%" | head -12 | sed 's/ *$//' >> $D/profile.txt
  { date -u; uptime; } >> $D/anatomy.load
done
