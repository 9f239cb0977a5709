#!/bin/bash
cd /work/main
O=/tmp/s55/m3
mkdir -p $O
echo "$(date -u +%T) start tails load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
rm -rf $O/t100
/usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 --no-cd \
  --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft ngram-cache" \
  --out $O/t100 --json -q > $O/tails100.json 2> $O/tails100.time
echo "$(date -u +%T) end tails rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log
