#!/bin/bash
# issue 50, packed tiles: measurements one after another under the exclusive lock
#   d827c6c's wheel:          O=/tmp/s55/m  measure.sh                (STEPS="probe curve tails parallel")
#   the final wheel (daaf4f9): O=/tmp/s55/m2 STEPS="probe tails parallel" measure.sh   -> final/
#   the tails once more:       O=/tmp/s55/m3 STEPS=tails measure.sh                     -> final/tails100_run3.json
cd /work/main
O=${O:-/tmp/s55/m}
STEPS=${STEPS:-probe curve tails parallel}
mkdir -p $O
M=/root/.cache/simul/models/gemma-3-270m-q4_k_m.gguf
step() { echo "$(date -u +%T) start $1 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log; }
done_() { echo "$(date -u +%T) end   $1 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log; }
for s in $STEPS; do
  step $s
  case $s in
    probe)
      for e in 1 0; do for q in 1 8; do
        echo "== GGML_CPU_EXACT=$e seqs=$q $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $O/probe.txt
        GGML_CPU_EXACT=$e .venv/bin/python ../shared/probes/pass_cost.py $M --threads 2 --seqs $q 2>&1 | grep -E "^n=|numpy" >> $O/probe.txt
      done; done
      GGML_CPU_EXACT=1 .venv/bin/python ../shared/probes/exact_probe.py $M 2>&1 | grep "^n=" > $O/exact_probe.txt ;;
    curve)
      /usr/bin/time -v .venv/bin/python tools/exact_costs.py --modes fast,exact --widths $(seq -s, 1 32) --repeats 9 --threads 2 --json $O/curve.json > $O/curve.txt 2> $O/curve.time ;;
    tails)
      rm -rf $O/t100
      /usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 --no-cd \
        --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft ngram-cache" \
        --out $O/t100 --json -q > $O/tails100.json 2> $O/tails100.time ;;
    parallel)
      rm -rf $O/b1 $O/b8
      /usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 --no-cd --parallel 8 --out $O/b1 --parallel-out $O/b8 --json -q > $O/parallel.json 2> $O/parallel.time ;;
  esac
  done_ $s
done
