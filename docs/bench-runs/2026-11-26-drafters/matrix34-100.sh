#!/usr/bin/env bash
# Issue 34's matrix: 100 FLORES devtest en-de lag-3 streams, back to back on a quiet machine.
cd "$(git rev-parse --show-toplevel)"  # streams: simul streams flores ... -o flores-devtest-en-de-lag3-100.jsonl (docs/gpu.md)
echo "L=12 start $(date +%T) load $(cat /proc/loadavg)"
/usr/bin/time -f "wall %e s user %U s sys %S s" .venv/bin/simul bench --streams flores-devtest-en-de-lag3-100.jsonl --limit 100 --threads 2 \
  --method lookup --method ngram-cache \
  --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft ngram-cache" \
  --method "spec --draft-max 4" --method "spec --draft-p-min 0.8" --method bild \
  --method "ssbd --beta 0.2 --tail-draft model --draft-max 4" \
  --draft-layers 12 --json -o runs/m-L12 --overwrite > runs/m-L12.json 2> runs/m-L12.err
echo "L=12 rc $? end $(date +%T) load $(cat /proc/loadavg)"
tail -1 runs/m-L12.err
echo "L=15 start $(date +%T) load $(cat /proc/loadavg)"
/usr/bin/time -f "wall %e s user %U s sys %S s" .venv/bin/simul bench --streams flores-devtest-en-de-lag3-100.jsonl --limit 100 --threads 2 --no-cd \
  --method "spec --draft-max 4" --method "spec --draft-p-min 0.8" \
  --draft-layers 15 --json -o runs/m-L15 --overwrite > runs/m-L15.json 2> runs/m-L15.err
echo "L=15 rc $? end $(date +%T) load $(cat /proc/loadavg)"
tail -1 runs/m-L15.err
