#!/bin/bash
cd /work/main
O=/tmp/s55/m
echo "$(date -u +%T) start sweep48 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
rm -rf $O/s48
/usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/held48.jsonl --threads 2 --no-cd \
  --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft lookup --draft-min 1" \
  --method "ssbd --beta 0.2 --tail-draft lookup --draft-max 6" \
  --method "ssbd --beta 0.2 --tail-draft ngram-cache" --method "ssbd --beta 0.2 --tail-draft ngram-cache --draft-min 1" \
  --method "ssbd --beta 0.2 --tail-draft ngram-cache --draft-max 6" --method "ssbd --beta 0.2 --tail-draft ngram-cache --draft-min 1 --draft-max 6" \
  --out $O/s48 --json -q > $O/sweep48.json 2> $O/sweep48.time
echo "$(date -u +%T) end sweep48 rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
