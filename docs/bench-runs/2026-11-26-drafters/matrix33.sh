#!/usr/bin/env bash
cd /work/main
echo "start $(date +%T) load $(cat /proc/loadavg)"
/usr/bin/time -v .venv/bin/simul bench --streams /tmp/flores100.jsonl --limit 100 --threads 2 \
  --method lookup --method ngram-cache \
  --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft ngram-cache" \
  --json -o /tmp/matrix33 --overwrite > /tmp/matrix33.json 2> /tmp/matrix33.err
echo "rc $? end $(date +%T) load $(cat /proc/loadavg)"
