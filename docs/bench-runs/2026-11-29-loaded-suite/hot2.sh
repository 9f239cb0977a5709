#!/bin/bash
# the tests over 10x in the loaded run of 56d23fe, idle and then beside two busy loops, on the commit with the
# process-wide BLAS limit (fixtures included)
cd /work/main
T="tests/fuzz/test_fuzz_rundirs.py tests/test_draft_model.py tests/test_ci_model.py tests/test_asr_longform.py::test_plain_text_references_get_times_near_the_yamls"
echo "idle start $(date -u +%T) $(git log --oneline -1 | cut -c1-8) load $(cut -d' ' -f1-3 /proc/loadavg)"
.venv/bin/python -m pytest -q -p no:cacheprovider --junitxml=/tmp/s53/hot2-idle.xml $T 2>&1 | tail -1
pids=(); for _ in 1 2; do python3 -c 'while 1: pass' & pids+=($!); done
sleep 60
echo "loaded start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
.venv/bin/python -m pytest -q -p no:cacheprovider --junitxml=/tmp/s53/hot2-loaded.xml $T 2>&1 | tail -1
echo "end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
kill "${pids[@]}"
