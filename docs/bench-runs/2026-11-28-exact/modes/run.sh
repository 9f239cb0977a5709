#!/usr/bin/env bash
# Issue 40: pass costs past 512 cells, then exact and fast mode side by side (bench --compare-modes) on
# 100 FLORES devtest en-de lag-3 streams: RT, SSBD 0.2 and SSBD 0 (the exact-method control)
cd /work/main
echo "costs start $(date +%T) load $(cat /proc/loadavg)"
.venv/bin/python tools/exact_costs.py --long --widths 1,2,4,8,16 --repeats 15 --threads 2 --modes fast,exact,exact-norepack --json /work/runs/costs/long.json > /work/runs/costs/long.log 2>&1
echo "bench start $(date +%T) load $(cat /proc/loadavg)"
/usr/bin/time -f "wall %e s user %U s sys %S s" .venv/bin/simul bench --streams /work/runs/flores-devtest-en-de-lag3-100.jsonl --limit 100 --threads 2 \
  --compare-modes --no-cd --method "ssbd --beta 0" \
  --json -o /work/runs/modes/exact --compare-out /work/runs/modes/fast --overwrite > /work/runs/modes/bench.json 2> /work/runs/modes/bench.err
echo "rc $? end $(date +%T) load $(cat /proc/loadavg)"
tail -1 /work/runs/modes/bench.err
