#!/bin/bash
# simul in fast mode (llama.cpp's stock arithmetic, as the reference binary runs) on the same streams and caps
cd /work/main
echo "$(date -u +%T) start simul fast n=32 load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/ref/cmpn.log
rm -rf /tmp/ref/n32_simulfast
/usr/bin/time -v .venv/bin/simul bench --streams /tmp/ref/s30.jsonl --template tower --beta 0.2 --no-cd --no-exact \
  --max-len-ratio 0 --max-len-slack 32 --out /tmp/ref/n32_simulfast --json -q > /tmp/ref/n32_simulfast.json 2> /tmp/ref/n32_simulfast.err
echo "$(date -u +%T) end simul fast rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/ref/cmpn.log
