#!/bin/bash
cd /work/main
echo "$(date -u +%T) start tails100 load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s54/tails100.log
rm -rf /tmp/s54/t100
/usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 --no-cd \
  --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft ngram-cache" \
  --out /tmp/s54/t100 --json -q > /tmp/s54/tails100.json 2> /tmp/s54/tails100.time
echo "$(date -u +%T) end tails100 rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s54/tails100.log
