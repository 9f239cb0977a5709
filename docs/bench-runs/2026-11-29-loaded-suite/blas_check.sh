#!/bin/bash
cd /work/main
pids=(); for _ in 1 2; do python3 -c 'while 1: pass' & pids+=($!); done
sleep 3
for v in "" 1; do
  s=$(date +%s.%N)
  OPENBLAS_NUM_THREADS=$v .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_ci_model.py::test_every_choice_of_the_design_has_a_wide_margin 2>&1 | tail -1
  echo "OPENBLAS_NUM_THREADS=[$v] $(python3 -c "import time; print(round(time.time()-$s,1))") s"
done
kill "${pids[@]}"
