#!/bin/bash
# the tails twice more (measure.sh's tails step into $O/tailsN/), then the wheels A/B in six short turns
# (A: the previous wheel in $PREV, B: the installed one; widths 1-32 of the probe's table, 7 passes each)
cd /work/main
O=${O:-/tmp/s56/run2}
PREV=${PREV:-/tmp/s56/ov_prev}
mkdir -p $O
for t in 2 3; do
  O=$O/tails$t STEPS=tails docs/bench-runs/2026-11-29-kquants/measure.sh
done
echo "$(date -u +%T) start ab6 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
for r in 1 2 3 4 5 6; do for v in A B; do
  if [ $v = A ]; then P=$PREV; else P=; fi
  PYTHONPATH=$P .venv/bin/python tools/exact_costs.py --modes exact,fast --widths 1,2,3,4,8,16,32 --repeats 7 \
    --threads 2 --json $O/ab6_$v$r.json > $O/ab6_$v$r.txt 2>&1
done; done
echo "$(date -u +%T) end ab6 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
