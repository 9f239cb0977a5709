#!/bin/bash
cd /work/main
echo "$(date -u +%T) start parallel load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s54/par.log
rm -rf /tmp/s54/b1 /tmp/s54/b8
/usr/bin/time -v .venv/bin/simul bench --streams /tmp/s54/en-de.jsonl --limit 100 --threads 2 --no-cd --parallel 8 --out /tmp/s54/b1 --parallel-out /tmp/s54/b8 --json -q > /tmp/s54/parallel.json 2> /tmp/s54/parallel.time
echo "$(date -u +%T) end parallel rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s54/par.log
