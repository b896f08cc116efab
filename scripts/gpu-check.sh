#!/usr/bin/env bash
# gpu-check.sh: turn a GPU machine into measured figures within minutes.
#
#   scripts/gpu-check.sh prepare [--build-dir DIR] [--prepared DIR]
#   scripts/gpu-check.sh [--out DIR] [--prepared DIR] [--build-dir DIR]
#                        [--gpu-build-dir DIR] [--jobs N]
#
# A GPU machine has CUDA, a compiler, CMake and ninja, but no LLVM, MLIR or
# Z3, and often no network: what only ccsynth's compiler can make is made
# beforehand, where the full build is ("prepare"), into one small folder
# (default gpu-prepared/, git-ignored) that travels with the checkout:
#   cu/*.cu        the generated algorithms of the GPU test, the GPU
#                  benchmark and this check (recipes: test/gpu/CMakeLists.txt):
#                  DGX-H100 ring AllGather/ReduceScatter/AllReduce, direct
#                  AllToAll, synthesized AllGather and AllReduce, a chain of
#                  dependent one-chunk hops, and that chain with its first
#                  signal deleted (a program that must end in a watchdog);
#   schedules/     the schedules they came from;
#   expected.txt   what the step model predicts for them on a DGX H100 box
#                  (NVLink between 8 GPUs: a reference, not the figure a
#                  run of 8 virtual ranks on one GPU should reach);
#   MANIFEST       commit, date, and the dependent steps of the chain.
#
# Without "prepare" the script does everything it can on this machine:
#   1. prepare, when ccsynth's compiler is built here (--build-dir, default
#      build/), else it uses the prepared folder it was given;
#   2. the runtime-only build (-DCCSYNTH_RUNTIME_ONLY=ON: runtime/,
#      ccsynth-run, and with a GPU the GPU tests, the benchmark and one
#      plugin per prepared algorithm) in --gpu-build-dir (default
#      build-gpu/), with every core;
#   3. without a GPU: one line saying so, exit 0 (CI runs this mode, so the
#      prepare step and the runtime-only build cannot rot);
#   4. with a GPU, each part under its own timeout (seconds):
#        build    120  the runtime-only build, nvcc included (configure
#                      within 60 of it)
#        tests    120  ctest -L gpu: gpu:virtual-ranks (8 virtual ranks,
#                      AG/RS/AR/A2A, fp32 and bf16, the watchdog),
#                      gpu:run-cuda (ccsynth-run on the ring/direct plugins)
#                      and gpu:ipc-ranks (8 ranks as processes over the CUDA
#                      IPC transport, int32 results bit for bit)
#        runner   120  ccsynth-run --backend cuda --compare-memcpy on the
#                      ring and synthesized AllGather and AllReduce at 1M,
#                      64M and 1G: GB/s, and time against cudaMemcpy D2D of
#                      the same bytes in the same run
#        chain     10  microseconds per dependent step: the chain at 1 KiB
#        watchdog  10  the chain without its first signal must end with the
#                      watchdog's report (rank, threadblock, step), not hang
#        bench     30  ccsynth-cuda-bench: 1 KiB to 64 MiB per rank
#        knobs     15  ccsynth-tb-copy-bench: one threadblock's copy and
#                      reduce, raw and with each kernel knob choice
#        ipc       45  the CUDA IPC transport, 8 ranks as processes (under
#                      MPS): AllGather and AllReduce at 64 MiB and 1 GiB,
#                      GB/s against cudaMemcpy D2D of the same bytes
#        multimem  10  the runtime's NVLink SHARP primitives through a
#                      multicast object of this GPU (one member):
#                      multimem.ld_reduce and multimem.st bit for bit, and
#                      their GB/s at 64 MiB and 1 GiB against cudaMemcpy
#                      D2D; where the driver offers no multicast object,
#                      the line saying so
#        torch     80  PyTorch DDP: world size 1 on PyTorch's NCCL with and
#                      without the NCCL-API interposer (identical losses);
#                      world size 8 on one GPU on the libnccl test double,
#                      alone and behind the interposer's CUDA plugins
#      in all 560 s (about 9 minutes), then one summary table. No part runs
#      past 575 s from the start (a part gets what is left), so the summary
#      is written inside a 600 s lease. Inner limits are set below the
#      parts' (IPC_RANKS_TIMEOUT, TORCH_RUN_TIMEOUT, CCSYNTH_FAKE_NCCL_TIMEOUT)
#      and PYTHON is PyTorch's interpreter (/opt/torch/.venv/bin/python3
#      where it exists). With a GPU, a GPU test that skips (77) fails the
#      tests part, except gpu:multimem where the driver offers no
#      multicast; the summary says "skipped" for parts that skip.
# --out DIR (default gpu-check-out/, git-ignored) receives summary.md, env.txt
# and the raw logs (build, tests, runner, watchdog, bench, knobs, ipc,
# multimem, torch).
# Exit: 0 when every part passed (or there is no GPU), 1 when one failed,
# 2 on bad usage or a missing prepared folder.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mode=check
if [[ ${1:-} == prepare ]]; then
  mode=prepare
  shift
fi
out=$root/gpu-check-out
prepared=$root/gpu-prepared
full=${BUILD_DIR:-$root/build}
gpubuild=$root/build-gpu
jobs=$(nproc 2>/dev/null || echo 2)
while (($#)); do
  case $1 in
  --out) out=$2 ;;
  --prepared) prepared=$2 ;;
  --build-dir) full=$2 ;;
  --gpu-build-dir) gpubuild=$2 ;;
  --jobs) jobs=$2 ;;
  -h | --help)
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "gpu-check: unknown argument '$1' (see --help)" >&2
    exit 2
    ;;
  esac
  shift 2 || { echo "gpu-check: $1 needs a value" >&2; exit 2; }
done
mkdir -p "$out" "$prepared" || exit 2
out=$(cd "$out" && pwd)
prepared=$(cd "$prepared" && pwd)
start=$SECONDS
deadline=$((start + 575))
note() { echo "gpu-check: $*"; }
# PyTorch's interpreter where the machine has one in its usual place.
if [[ -z ${PYTHON:-} ]]; then
  PYTHON=python3
  [[ -x /opt/torch/.venv/bin/python3 ]] && PYTHON=/opt/torch/.venv/bin/python3
fi
export PYTHON

# ---- prepare: the sources only ccsynth's compiler can make --------------
prepare() {
  local cc=$full/tools/ccsynth/ccsynth t0=$SECONDS
  note "prepare: generating the CUDA sources with $cc"
  cmake --build "$full" --target ccsynth-gpu-sources -j "$jobs" \
    >"$out/prepare.log" 2>&1 || {
    cat "$out/prepare.log" >&2
    note "prepare failed (log above)"
    return 1
  }
  local stage
  stage=$(mktemp -d "$prepared/.stage.XXXXXX") || return 1
  mkdir -p "$stage/cu" "$stage/schedules"
  cp "$full"/gpu-sources/*.cu "$stage/cu/" &&
    cp "$full"/gpu-sources/*.json "$stage/schedules/" || return 1
  {
    echo "# What the step model (ccsynth simulate --level steps) predicts for"
    echo "# these schedules on a DGX H100 box (8 GPUs over NVLink). A run of"
    echo "# 8 virtual ranks on one GPU moves the same bytes through one GPU's"
    echo "# memory instead: compare shapes, not figures."
    for s in "$stage"/schedules/h100_*.json; do
      echo
      echo "## $(basename "$s" .json)"
      (cd "$stage/schedules" &&
        "$cc" simulate "$(basename "$s")" --level steps --sizes 1M,64M,1G 2>&1)
    done
  } >"$stage/expected.txt"
  local steps
  steps=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(1 + max(t["step"] for t in d["transfers"]))' \
    "$stage/schedules/chain_broadcast.json") || return 1
  {
    echo "commit $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "chain_steps $steps"
    (cd "$stage" && sha256sum cu/*.cu)
  } >"$stage/MANIFEST"
  # Files whose content did not change keep their time stamps, so that a
  # runtime-only build already made from them stays up to date.
  local d f
  for d in cu schedules; do
    mkdir -p "$prepared/$d" || return 1
    for f in "$prepared/$d"/*; do
      [[ -e $f && ! -e $stage/$d/${f##*/} ]] && rm -f "$f"
    done
    for f in "$stage/$d"/*; do
      cmp -s "$f" "$prepared/$d/${f##*/}" || cp "$f" "$prepared/$d/" ||
        return 1
    done
  done
  mv "$stage/expected.txt" "$stage/MANIFEST" "$prepared/" &&
    rm -rf "$stage" || return 1
  note "prepare: $(ls "$prepared/cu" | wc -l) sources, $(du -sh "$prepared" |
    cut -f1) in $prepared ($((SECONDS - t0)) s)"
}

if [[ $mode == prepare ]]; then
  [[ -x $full/tools/ccsynth/ccsynth ]] || {
    note "no ccsynth in $full: build it first (scripts/bootstrap.sh)" >&2
    exit 2
  }
  prepare || exit 1
  exit 0
fi

t_prepare=0
if [[ -x $full/tools/ccsynth/ccsynth ]]; then
  t0=$SECONDS
  prepare || exit 1
  t_prepare=$((SECONDS - t0))
elif [[ ! -f $prepared/MANIFEST ]]; then
  note "no prepared sources in $prepared and no ccsynth compiler here:" \
    "run 'scripts/gpu-check.sh prepare' where ccsynth is built and bring" \
    "its folder (--prepared DIR)" >&2
  exit 2
else
  here=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
  made=$(sed -n 's/^commit //p' "$prepared/MANIFEST")
  [[ $here == "$made" ]] ||
    note "warning: sources prepared at commit $made, checkout is $here"
fi

# ---- the machine ----------------------------------------------------------
gpu=0
if { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null |
  grep -q '^GPU '; } || [[ -e /dev/nvidia0 ]]; then
  gpu=1
fi
arch=
if ((gpu)); then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
    head -1 | tr -d ' .')
  [[ $cap =~ ^[0-9]+$ ]] && arch=$cap
fi

# ---- runtime-only build ---------------------------------------------------
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cfg=(-DCMAKE_BUILD_TYPE=Release -DCCSYNTH_RUNTIME_ONLY=ON
  "-DCCSYNTH_PREPARED_DIR=$prepared")
[[ -n $arch ]] && cfg+=("-DCMAKE_CUDA_ARCHITECTURES=$arch"
  "-DCCSYNTH_CUDA_RUN_ARCHS=$arch")
# The interposer needs nccl.h: PyTorch's NCCL wheel has one when the CUDA
# toolkit does not.
if [[ ! -f /usr/local/cuda/include/nccl.h && -z ${NCCL_HOME:-} ]]; then
  wheel=$("$PYTHON" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' \
    2>/dev/null || true)
  [[ -n $wheel && -f $wheel/include/nccl.h ]] && export NCCL_HOME=$wheel
fi
t0=$SECONDS
if ((gpu)); then
  targets=()
else
  # Without a GPU only what the host compiler builds: the nvcc builds of
  # the same sources are the full build's (gpu test, benchmark).
  targets=(--target ccsynth-run)
fi
{
  timeout 60 cmake -S "$root" -B "$gpubuild" "${gen[@]}" "${cfg[@]}" &&
    timeout $((120 - (SECONDS - t0))) cmake --build "$gpubuild" -j "$jobs" \
      "${targets[@]}"
} >"$out/build.log" 2>&1
build_rc=$?
t_build=$((SECONDS - t0))
if ((build_rc != 0)); then
  tail -40 "$out/build.log" >&2
  note "the runtime-only build failed (exit $build_rc after $t_build s;" \
    "$out/build.log)"
  exit 1
fi
"$gpubuild/tools/ccsynth-run/ccsynth-run" --help >/dev/null || {
  note "ccsynth-run does not start"
  exit 1
}
if ((!gpu)); then
  note "no GPU on this machine (nvidia-smi lists none): prepared the" \
    "sources (${t_prepare} s) and built the runtime-only part" \
    "(${t_build} s); nothing was measured"
  exit 0
fi

# ---- on the GPU -----------------------------------------------------------
run=$gpubuild/tools/ccsynth-run/ccsynth-run
plugins=$gpubuild/plugins
failed=0
declare -A took status
part() { # part NAME SECONDS LOG CMD...: runs CMD under a timeout
  local name=$1 limit=$2 log=$3 t=$SECONDS rc
  shift 3
  ((limit > deadline - SECONDS)) && limit=$((deadline - SECONDS))
  if ((limit < 1)); then
    echo "== not run: the check's 575 s were spent" >>"$log"
    took[$name]=${took[$name]:-0}
    return 124
  fi
  echo "== $*" >>"$log"
  timeout "$limit" "$@" >>"$log" 2>&1
  rc=$?
  took[$name]=$((${took[$name]:-0} + SECONDS - t))
  ((rc == 124)) && echo "== timed out after $limit s" >>"$log"
  return $rc
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "prepared: $(sed -n 's/^commit //p' "$prepared/MANIFEST")"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
    --format=csv 2>&1
  nvidia-smi 2>&1 | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/cuda driver api: \1/p'
  command -v nvcc >/dev/null && nvcc --version 2>&1 | tail -2 ||
    /usr/local/cuda/bin/nvcc --version 2>&1 | tail -2
  echo "cpus: $(nproc)"
} >"$out/env.txt"
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
cuda=$(sed -n 's/.*release \([0-9.]*\).*/\1/p' "$out/env.txt" | head -1)

# Tests: the real ctest entries of the runtime-only build.
: >"$out/tests.log"
export IPC_RANKS_TIMEOUT=100 CCSYNTH_FAKE_NCCL_TIMEOUT=15
part tests 120 "$out/tests.log" ctest --test-dir "$gpubuild" -L gpu \
  --output-on-failure --no-tests=error
status[tests]=$?
tests_line=$(grep -E 'tests passed|tests failed' "$out/tests.log" | tail -1)
# A GPU is here: a GPU test that skips did not start CUDA (gpu:multimem
# skips where the driver offers no multicast object, which it says).
skipped=$(grep -oE 'gpu:[a-z-]+ \(Skipped\)' "$out/tests.log" |
  grep -v '^gpu:multimem ' | cut -d' ' -f1 | paste -sd ' ' -)
if [[ -n $skipped ]]; then
  status[tests]=1
  tests_line="$tests_line; skipped with a GPU here: $skipped"
fi

# The runner on ring and synthesized AllGather and AllReduce.
: >"$out/runner.log"
rows=()
runner_deadline=$((SECONDS + 120))
for algo in h100_ring_allgather h100_synth_allgather h100_ring_allreduce \
  h100_synth_allreduce; do
  for size in 1M 64M 1G; do
    left=$((runner_deadline - SECONDS))
    if ((left < 5)); then
      rows+=("| $algo | $size | not run: the runner's 120 s were spent | | | |")
      failed=1
      continue
    fi
    iters=20
    [[ $size == 1G ]] && iters=5
    tmp=$(mktemp)
    part runner "$left" "$tmp" "$run" "$plugins/lib$algo.so" --backend cuda \
      --size "$size" --iters $iters --warmup 2 --compare-memcpy
    rc=$?
    cat "$tmp" >>"$out/runner.log"
    if ((rc == 0)); then
      read -r us gbps < <(awk '/correct \(matches/ {print $2, $3}' "$tmp")
      ratio=$(sed -n 's/.*algorithm \/ memcpy time: \([0-9.]*\)x.*/\1/p' "$tmp")
      rows+=("| $algo | $size | $us | $gbps | ${ratio}x | correct |")
    else
      why=$(grep -m1 'error' "$tmp" | cut -c1-120)
      ((rc == 124)) && why="timed out"
      rows+=("| $algo | $size | | | | FAILED (exit $rc): $why |")
      failed=1
    fi
    rm -f "$tmp"
  done
done

# Microseconds per dependent step: the chain at 1 KiB.
hops=$(sed -n 's/^chain_steps //p' "$prepared/MANIFEST")
chain_tmp=$(mktemp)
part chain 10 "$chain_tmp" "$run" "$plugins/libchain_broadcast.so" \
  --backend cuda --size 1K --iters 200 --warmup 10
status[chain]=$?
cat "$chain_tmp" >>"$out/runner.log"
chain_us=$(awk '/correct \(matches/ {print $2}' "$chain_tmp")
rm -f "$chain_tmp"
chain_line="FAILED (exit ${status[chain]})"
if ((status[chain] == 0)) && [[ -n $chain_us && -n $hops ]]; then
  chain_line=$(awk -v t="$chain_us" -v h="$hops" \
    'BEGIN { printf "%.2f us per dependent step (%s us per launch / %d hops, 1 KiB)", t / h, t, h }')
fi

# The watchdog: a program without one signal must end with its report.
: >"$out/watchdog.log"
part watchdog 10 "$out/watchdog.log" "$run" \
  "$plugins/libchain_broadcast_mutant.so" --backend cuda --size 1K \
  --iters 1 --warmup 0 --timeout 1
wd_rc=$?
wd_msg=$(grep -m1 -E 'timed out waiting' "$out/watchdog.log" | cut -c1-160)
if ((wd_rc == 1)) && [[ -n $wd_msg ]]; then
  status[watchdog]=0
  wd_line="fired after ${took[watchdog]} s: $wd_msg"
else
  status[watchdog]=1
  wd_line="FAILED: exit $wd_rc$( ((wd_rc == 124)) && echo " (it hung)"), no watchdog report"
fi

# The benchmark of 1 KiB to 64 MiB per rank.
: >"$out/bench.log"
part bench 30 "$out/bench.log" "$gpubuild/bench/ccsynth-cuda-bench" 20
status[bench]=$?

# One threadblock's copy and reduce: raw loops, then the runtime's loops
# with each kernel knob choice beside the step model's in-flight rule.
: >"$out/knobs.log"
part knobs 15 "$out/knobs.log" "$gpubuild/bench/ccsynth-tb-copy-bench"
status[knobs]=$?

# The CUDA IPC transport: ranks as processes, figures at 64 MiB and 1 GiB.
: >"$out/ipc.log"
IPC_RANKS_TIMEOUT=40 part ipc 45 "$out/ipc.log" "$root/test/gpu/ipc-ranks.sh" \
  "$gpubuild/test/gpu/ccsynth-gpu-ipc-ranks" bench "$out/ipc-work"
status[ipc]=$?

# Multimem through a real multicast object (skipped, 77, where the driver
# offers none: the summary gives its reason).
: >"$out/multimem.log"
part multimem 10 "$out/multimem.log" "$gpubuild/test/gpu/ccsynth-gpu-multimem" \
  bench
status[multimem]=$?
mm_line=$(grep -m1 '^skipped:' "$out/multimem.log" | cut -c1-200)
mm_res=
((status[multimem] == 77)) && status[multimem]=0 && mm_res=skipped

# PyTorch as the client of the interposer (skipped, 77, without PyTorch).
: >"$out/torch.log"
TORCH_RUN_TIMEOUT=30 part torch 80 "$out/torch.log" "$root/test/gpu/torch-check.sh" \
  "$gpubuild/runtime/interposer/libccsynth_nccl.so" \
  "$gpubuild/test/interposer/fake/libnccl.so.2" "$out/torch" \
  "$plugins"/libh100_ring_allreduce.so "$plugins"/libh100_ring_allgather.so
status[torch]=$?
torch_res=
((status[torch] == 77)) && status[torch]=0 && torch_res=skipped

for p in tests chain watchdog bench knobs ipc multimem torch; do
  ((status[$p] == 0)) || failed=1
done
res() { ((status[$1] == 0)) && echo ok || echo "FAILED (exit ${status[$1]})"; }
{
  echo "# ccsynth GPU check"
  echo
  echo "$gpu_name (sm_$arch), driver $driver, CUDA toolkit ${cuda:-?};" \
    "$(date -u +%Y-%m-%d); commit $(git -C "$root" rev-parse --short HEAD \
      2>/dev/null || echo unknown)"
  echo
  echo "| part | result | seconds (limit) |"
  echo "| --- | --- | --- |"
  echo "| runtime-only build | ok | $t_build (120) |"
  echo "| ctest -L gpu | $(res tests): ${tests_line:-no summary} | ${took[tests]} (120) |"
  echo "| runner | $( ((failed)) && echo "see rows" || echo ok) | ${took[runner]:-0} (120) |"
  echo "| chain | $chain_line | ${took[chain]} (10) |"
  echo "| watchdog | $wd_line | ${took[watchdog]} (10) |"
  echo "| ccsynth-cuda-bench | $(res bench) (bench.log) | ${took[bench]} (30) |"
  echo "| threadblock copy, kernel knobs | $(res knobs) (table below) | ${took[knobs]} (15) |"
  echo "| CUDA IPC, 8 processes | $(res ipc) (table below) | ${took[ipc]} (45) |"
  echo "| multimem, one-member multicast object | ${mm_res:-$(res multimem)}${mm_line:+: $mm_line} | ${took[multimem]} (10) |"
  echo "| PyTorch + interposer | ${torch_res:-$(res torch)}: $(grep 'torch-check:' "$out/torch.log" | cut -c14-150 | paste -sd ';' -) | ${took[torch]} (80) |"
  echo
  echo "8 virtual ranks on one GPU, fp32 sum; size = the larger buffer of a"
  echo "rank (nccl-tests); memcpy = time / time of one cudaMemcpy D2D of all"
  echo "ranks' output bytes in the same run (lower is better, 1.00x = as"
  echo "fast as the copy engine path moves the same bytes):"
  echo
  echo "| algorithm | size | time/iter (us) | algbw (GB/s) | time / memcpy | check |"
  echo "| --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  echo "One threadblock (ccsynth-tb-copy-bench):"
  echo
  echo '```'
  cat "$out/knobs.log"
  echo '```'
  echo
  echo "CUDA IPC transport, 8 ranks as processes ($(grep -m1 -o 'MPS daemon started\|no MPS here\|failed: ranks sharing' "$out/ipc.log" || echo "?")):"
  echo
  echo '```'
  sed -n '/^collective/,/^allreduce *1024M/p' "$out/ipc.log"
  echo '```'
  echo
  echo "NVLink SHARP primitives through a one-member multicast object:"
  echo
  echo '```'
  grep -E '^(multimem |skipped:|FAIL|PASSED|FAILED)|multicast object of' "$out/multimem.log"
  echo '```'
  echo
  echo "total $((SECONDS - start)) s; logs in $out"
} >"$out/summary.md"
cat "$out/summary.md"
exit $failed
