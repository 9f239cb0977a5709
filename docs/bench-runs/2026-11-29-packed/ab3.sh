#!/bin/bash
cd /work/main
O=/tmp/s55/m
for r in 1 2 3; do for v in A C; do
  if [ $v = A ]; then P=/tmp/s55/ov_prev; else P=/tmp/k50/ov; fi
  echo "$(date -u +%T) start ab3 $v$r load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
  PYTHONPATH=$P .venv/bin/python tools/exact_costs.py --modes exact,fast --widths 1,2,3,4 --repeats 41 --threads 2 --json $O/ab3_$v$r.json > $O/ab3_$v$r.txt 2>&1
done; done
echo "$(date -u +%T) end ab3 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
