#!/bin/bash
# The SSBD authors' binary (llama.cpp examples/self-spec-bias at 82c35ea, built outside the repository against
# llama-cpp-python 0.3.36's llama.cpp: stock, and with simul's patch run with GGML_CPU_EXACT=1) against simul on
# Qwen2.5-Coder-1.5B-Instruct: the same chat prompt in both (simul's `--template chat` rendered once and passed
# to the binary as --in-prefix/--in-suffix), beta 0.2, greedy, at most N tokens an update in both (the binary's
# -n N; simul's --max-len-ratio 0 --max-len-slack N), 2 threads, 12 FLORES devtest en-de streams (501-512, lag 3).
# Per round: binary stock SSBD and RT, binary exact SSBD and RT, simul RT and SSBD; two rounds.
#   files in $W: n32_ref15_{ssbd,rt}_R.*, n32_refexact15_{ssbd,rt}_R.*, n32_simul15_R.json and n32_simul15_R/
#   summarize: cd $W && python /work/main/docs/bench-runs/2026-11-29-tails-reference/summarize.py 32 ref15 simul15 (and refexact15)
N=${N:-32}
W=${W:-/tmp/ref}
cd "$W"
MODEL=$(cd /work/main && .venv/bin/simul models path qwen2.5-coder-1.5b)
P="$(cat prefix_qwen_ende.txt; echo x)"; P="${P%x}"; S="$(cat suffix_qwen_ende.txt; echo x)"; S="${S%x}"
log() { echo "$(date -u +%T) $* load $(cut -d' ' -f1-3 /proc/loadavg)" >> reference-1.5b.log; }
for round in ${ROUNDS:-1 2}; do
  for build in stock exact; do
    if [ $build = stock ]; then TAG=ref15; ENV=(); else TAG=refexact15; ENV=(GGML_CPU_EXACT=1); fi
    for mode in ssbd rt; do
      extra=""; [ $mode = rt ] && extra="--no-draft-reuse"
      log "start $TAG $mode round $round n=$N"
      env "${ENV[@]}" /usr/bin/time -v build-$build/bin/llama-self-spec-bias -m "$MODEL" -f stream12.jsonl -t 2 \
        --draft-bias-beta 0.2 --temp 0 --in-prefix "$P" --in-suffix "$S" -n $N $extra \
        -o n${N}_${TAG}_${mode}_$round.jsonl > n${N}_${TAG}_${mode}_$round.out 2> n${N}_${TAG}_${mode}_$round.err
      log "end $TAG $mode round $round rc=$?"
    done
  done
  log "start simul15 round $round n=$N"
  rm -rf "$W/n${N}_simul15_$round"
  (cd /work/main && /usr/bin/time -v .venv/bin/simul bench --model qwen2.5-coder-1.5b --template chat \
     --streams /work/dev/streams/fl-ende-501-12.jsonl --threads 2 --beta 0.2 --no-cd --max-len-ratio 0 \
     --max-len-slack $N --out "$W/n${N}_simul15_$round" --json -q > "$W/n${N}_simul15_$round.json" \
     2> "$W/n${N}_simul15_$round.err")
  log "end simul15 round $round rc=$?"
done
