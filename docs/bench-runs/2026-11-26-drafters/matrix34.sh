#!/usr/bin/env bash
cd /work/main
for L in 12 15; do
  echo "L=$L start $(date +%T) load $(cat /proc/loadavg)"
  extra=()
  if [[ $L == 12 ]]; then extra=(--method bild --method "ssbd --beta 0.2 --tail-draft model --draft-max 4"); fi
  /usr/bin/time -f "wall %e s user %U s sys %S s" .venv/bin/simul bench --streams /tmp/flores100.jsonl --limit 10 --threads 2 --no-cd \
    --method "spec --draft-max 4" --method "spec --draft-p-min 0.8" "${extra[@]}" \
    --draft-layers $L --json -o /tmp/matrix34-L$L --overwrite > /tmp/matrix34-L$L.json 2> /tmp/matrix34-L$L.err
  echo "L=$L rc $? end $(date +%T) load $(cat /proc/loadavg)"
  tail -1 /tmp/matrix34-L$L.err
done
