#!/bin/bash
# issue 50, the K-quant kernels (repacked Q4_K multi-column gemv, Q6_K tile): measurements one after another,
# run under the exclusive lock (flock -x /tmp/simul-cpu.lock measure.sh). A: the previous wheel (a78f0f8's patch,
# unzipped from the wheel cache into $PREV); B: the installed wheel (this patch).
#   O=/tmp/s56/run1 STEPS="ab kernels probe tails parallel" measure.sh
#   O=/tmp/s56/run3 STEPS="probe methods" measure.sh     (after the reference binary, docs/bench-runs/2026-11-29-tails-reference)
cd /work/main
O=${O:-/tmp/s56/run1}
PREV=${PREV:-/tmp/s56/ov_prev}
STEPS=${STEPS:-ab kernels probe tails parallel}
mkdir -p $O
M=/root/.cache/simul/models/gemma-3-270m-q4_k_m.gguf
W=1,2,3,4,5,6,8,12,16,24,32
step() { echo "$(date -u +%T) start $1 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log; }
done_() { echo "$(date -u +%T) end   $1 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log; }
for s in $STEPS; do
  step $s
  case $s in
    ab)
      for r in 1 2; do for v in A B; do
        if [ $v = A ]; then P=$PREV; else P=; fi
        PYTHONPATH=$P .venv/bin/python tools/exact_costs.py --modes exact,fast --widths $W --repeats 9 --threads 2 \
          --json $O/ab_$v$r.json > $O/ab_$v$r.txt 2>&1
      done; done ;;
    kernels)
      .venv/bin/python tools/exact_costs.py --kernels --widths 1,2,4,8,16,32 --repeats 9 --threads 2 \
        --json $O/kernels.json > $O/kernels.txt 2>&1 ;;
    probe)
      for e in 1 0; do for q in 1 8; do
        echo "== GGML_CPU_EXACT=$e seqs=$q $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $O/probe.txt
        GGML_CPU_EXACT=$e .venv/bin/python ../shared/probes/pass_cost.py $M --threads 2 --seqs $q 2>&1 | grep -E "^n=|numpy" >> $O/probe.txt
      done; done
      GGML_CPU_EXACT=1 .venv/bin/python ../shared/probes/exact_probe.py $M 2>&1 | grep "^n=" > $O/exact_probe.txt ;;
    tails)
      rm -rf $O/t100
      /usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 --no-cd \
        --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft ngram-cache" \
        --out $O/t100 --json -q > $O/tails100.json 2> $O/tails100.time ;;
    methods)
      rm -rf $O/m100
      /usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 \
        --method lookup --method ngram-cache \
        --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft ngram-cache" \
        --out $O/m100 --json -q > $O/methods100.json 2> $O/methods100.time ;;
    parallel)
      rm -rf $O/b1 $O/b8
      /usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 --no-cd --parallel 8 \
        --out $O/b1 --parallel-out $O/b8 --json -q > $O/parallel.json 2> $O/parallel.time ;;
  esac
  done_ $s
done
