#!/bin/bash
# previous wheel (A, 942bc82's pairs, /tmp/s55/ov_prev) against the installed one (B, d827c6c's packed tiles), taking turns
cd /work/main
O=/tmp/s55/m
for r in 1 2; do for v in A B; do
  if [ $v = A ]; then P=/tmp/s55/ov_prev; else P=; fi
  echo "$(date -u +%T) start ab $v$r load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
  PYTHONPATH=$P .venv/bin/python tools/exact_costs.py --modes exact,fast --widths $(seq -s, 1 32) --repeats 9 --threads 2 --json $O/ab_$v$r.json > $O/ab_$v$r.txt 2>&1
done; done
echo "$(date -u +%T) end ab load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
