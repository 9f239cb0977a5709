#!/bin/bash
# the tests that ran over 10x their idle time beside two busy loops, again beside two loops, after the fix
cd /work/main
pids=(); for _ in 1 2; do python3 -c 'while 1: pass' & pids+=($!); done
sleep 60
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
.venv/bin/python -m pytest -v -p no:cacheprovider --junitxml=/tmp/s53/hot.xml \
  tests/test_ci_model.py tests/fuzz/test_fuzz_rundirs.py tests/test_fuzz_tool.py tests/test_streams_cli.py 2>&1 | tail -3
echo "end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
kill "${pids[@]}"
