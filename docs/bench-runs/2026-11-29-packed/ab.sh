#!/bin/bash
# the previous wheel (A: 942bc82's, unzipped from the wheel cache to /tmp/s55/ov_prev) against another build,
# taking turns: ab.sh NAME B_PYTHONPATH WIDTHS REPEATS ROUNDS (an empty B_PYTHONPATH: the installed wheel)
#   ab_curve: ab.sh ab  "" $(seq -s, 1 32) 9 2     (B: d827c6c's wheel)
#   ab_two:   ab.sh ab2 "" 1,2,3,4 41 3      (B: d827c6c's wheel)
#   ab3:      ab.sh ab3 /tmp/k50/ov 1,2,3,4 41 3   (C: the dev build of daaf4f9, packed from 3 columns)
cd /work/main
O=/tmp/s55/m
NAME=$1; BPATH=$2; WIDTHS=$3; REPEATS=$4; ROUNDS=$5
B=B; [ "$NAME" = ab3 ] && B=C
for r in $(seq 1 $ROUNDS); do for v in A $B; do
  if [ $v = A ]; then P=/tmp/s55/ov_prev; else P=$BPATH; fi
  echo "$(date -u +%T) start $NAME $v$r load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
  PYTHONPATH=$P .venv/bin/python tools/exact_costs.py --modes exact,fast --widths $WIDTHS --repeats $REPEATS --threads 2 --json $O/${NAME}_$v$r.json > $O/${NAME}_$v$r.txt 2>&1
done; done
echo "$(date -u +%T) end $NAME load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
