#!/bin/bash
# issue 50, packed tiles: the wheel of d827c6c, one measurement after another under the exclusive lock
cd /work/main
O=/tmp/s55/m
M=/root/.cache/simul/models/gemma-3-270m-q4_k_m.gguf
step() { echo "$(date -u +%T) start $1 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log; }
done_() { echo "$(date -u +%T) end   $1 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log; }
step probe
for e in 1 0; do for s in 1 8; do
  echo "== GGML_CPU_EXACT=$e seqs=$s $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $O/probe.txt
  GGML_CPU_EXACT=$e .venv/bin/python ../shared/probes/pass_cost.py $M --threads 2 --seqs $s 2>&1 | grep -E "^n=|numpy" >> $O/probe.txt
done; done
GGML_CPU_EXACT=1 .venv/bin/python ../shared/probes/exact_probe.py $M 2>&1 | grep "^n=" > $O/exact_probe.txt
done_ probe
step curve
/usr/bin/time -v .venv/bin/python tools/exact_costs.py --modes fast,exact --widths $(seq -s, 1 32) --repeats 9 --threads 2 --json $O/curve.json > $O/curve.txt 2> $O/curve.time
done_ curve
step tails
rm -rf $O/t100
/usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 --no-cd \
  --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft ngram-cache" \
  --out $O/t100 --json -q > $O/tails100.json 2> $O/tails100.time
done_ tails
step parallel
rm -rf $O/b1 $O/b8
/usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 --no-cd --parallel 8 --out $O/b1 --parallel-out $O/b8 --json -q > $O/parallel.json 2> $O/parallel.time
done_ parallel
