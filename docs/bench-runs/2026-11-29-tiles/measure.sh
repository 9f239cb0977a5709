#!/bin/bash
# issue 50 measurements with the simul-exact/4 wheel, one after another under the exclusive lock
# en-de.jsonl: simul streams flores --data-dir ../shared/data/flores200 --split devtest --src-lang eng_Latn --tgt-lang deu_Latn --lag 3 -o en-de.jsonl
cd "$(git rev-parse --show-toplevel)"
export PYTHONPATH=$PWD
O=runs
mkdir -p $O
step() { echo "$(date -u +%T) start $1 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log; }
done_() { echo "$(date -u +%T) end   $1 load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/log; }
step curve
/usr/bin/time -v .venv/bin/python tools/exact_costs.py --modes fast,exact,fast-notiles,exact-notiles --widths 1,2,3,4,5,6,8,12,16,24,32 --repeats 9 --threads 2 --json $O/curve.json > $O/curve.txt 2> $O/curve.time
done_ curve
step kernels
/usr/bin/time -v .venv/bin/python tools/exact_costs.py --kernels --widths 1,2,4,8,16,32 --repeats 9 --threads 2 --json $O/kernels.json > $O/kernels.txt 2> $O/kernels.time
done_ kernels
step parallel
rm -rf $O/b1 $O/b8
/usr/bin/time -v .venv/bin/simul bench --streams en-de.jsonl --limit 100 --threads 2 --no-cd --parallel 8 --out $O/b1 --parallel-out $O/b8 --json -q > $O/parallel.json 2> $O/parallel.time
done_ parallel
step methods
rm -rf $O/i3
/usr/bin/time -v .venv/bin/simul bench --streams en-de.jsonl --limit 100 --threads 2 --method lookup --method ngram-cache --method "ssbd --beta 0.2 --tail-draft lookup" --method "ssbd --beta 0.2 --tail-draft ngram-cache" --out $O/i3 --json -q > $O/methods.json 2> $O/methods.time
done_ methods
