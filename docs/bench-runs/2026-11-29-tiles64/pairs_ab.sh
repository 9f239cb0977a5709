#!/bin/bash
# pass costs, exact mode: without the column-pair tiles (A: the wheel of 312c594) against with them (B: the dev build), A B x3
cd /work/main
L=/tmp/s54/pairs_ab.log
for i in 1 2 3; do
  for v in A B; do
    pp=/tmp/s54/ov_old; [ $v = B ] && pp=/tmp/k50/ov
    echo "$(date -u +%T) start $v$i load $(cut -d' ' -f1-3 /proc/loadavg)" >> $L
    PYTHONPATH=$pp .venv/bin/python tools/exact_costs.py --modes exact --widths 1,2,3,4,8,16,32,64 --repeats 11 --threads 2 --json /tmp/s54/ab_$v$i.json 2>/dev/null | grep -v "^llama\|^load_\|^print_info\|^\.\|^graph\|^sched\|^resolve" > /tmp/s54/ab_$v$i.txt
    echo "$(date -u +%T) end $v$i load $(cut -d' ' -f1-3 /proc/loadavg)" >> $L
  done
done
