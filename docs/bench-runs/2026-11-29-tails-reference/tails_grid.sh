#!/bin/bash
cd /work/main
echo "$(date -u +%T) start load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s54/grid.log
M=()
for d in lookup ngram-cache; do for k in 2 3 4 6; do M+=(--method "ssbd --beta 0.2 --tail-draft $d --draft-max $k"); done; done
rm -rf /tmp/s54/grid
/usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/held48.jsonl --threads 2 --no-cd "${M[@]}" --out /tmp/s54/grid --json -q > /tmp/s54/grid.json 2> /tmp/s54/grid.time
echo "$(date -u +%T) end rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s54/grid.log
