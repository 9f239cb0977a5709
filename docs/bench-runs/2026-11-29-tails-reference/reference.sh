#!/bin/bash
# SSBD reference binary against simul with equal work per update: both capped at N tokens an update
# (the binary's -n N; simul's --max-len-ratio 0 --max-len-slack N), the tower template, beta 0.2; 30 FLORES
# devtest en-de streams (lag 3); two rounds, alternating; each tool otherwise at its defaults (2 threads).
#   BUILD=stock ./reference.sh   the binary as built (llama.cpp's stock arithmetic); files n32_ref_*, n32_simul_*
#   BUILD=exact ./reference.sh   the binary rebuilt with simul's patch, run with GGML_CPU_EXACT=1;
#                                files n32_refexact_*, n32_simulB_*
#   TAG=_kq BUILD=exact ...      the same, files n32_refexact_kq_*, n32_simulB_kq_* (the rerun of 2026-11-29
#                                19:2x UTC, binary and wheel with the K-quant kernels: docs/bench-runs/2026-11-29-kquants)
N=${N:-32}
TAG=${TAG:-}
case "${BUILD:-stock}" in
  stock) REF=ref$TAG; SIM=simul$TAG; ENV=(); LOG=cmpn$TAG.log; WHAT=ref ;;
  exact) REF=refexact$TAG; SIM=simulB$TAG; ENV=(GGML_CPU_EXACT=1); LOG=cmpn_exact$TAG.log; WHAT="ref(exact)" ;;
  *) echo "BUILD is stock or exact" >&2; exit 2 ;;
esac
cd /tmp/ref
MODEL=$(cd /work/main && .venv/bin/python -c "from simul.request.default_model import default_model_path; print(default_model_path())")
P="$(cat prefix.txt; echo x)"; P="${P%x}"; S="$(cat suffix.txt; echo x)"; S="${S%x}"  # keep the trailing newline ($(...) strips it)
log() { echo "$(date -u +%T) $* load $(cut -d' ' -f1-3 /proc/loadavg)" >> $LOG; }
for round in ${ROUNDS:-1 2}; do
  for mode in ssbd rt; do
    extra=""; [ $mode = rt ] && extra="--no-draft-reuse"
    log "start $WHAT $mode round $round n=$N"
    env "${ENV[@]}" /usr/bin/time -v build/bin/llama-self-spec-bias -m "$MODEL" -f stream.jsonl --draft-bias-beta 0.2 --temp 0 \
      --in-prefix "$P" --in-suffix "$S" -n $N $extra -o n${N}_${REF}_${mode}_$round.jsonl > n${N}_${REF}_${mode}_$round.out 2> n${N}_${REF}_${mode}_$round.err
    log "end $WHAT $mode round $round rc=$?"
  done
  log "start simul round $round n=$N"
  rm -rf /tmp/ref/n${N}_${SIM}_$round
  (cd /work/main && /usr/bin/time -v .venv/bin/simul bench --streams /tmp/ref/s30.jsonl --template tower --beta 0.2 --no-cd \
     --max-len-ratio 0 --max-len-slack $N --out /tmp/ref/n${N}_${SIM}_$round --json -q > /tmp/ref/n${N}_${SIM}_$round.json 2> /tmp/ref/n${N}_${SIM}_$round.err)
  log "end simul round $round rc=$?"
done
