#!/usr/bin/env bash
# bootstrap.sh: set up a fresh Debian 12 machine for ccsynth, build it, and
# run either the demo (synthesis + compile) or the whole test suite.
#
#   scripts/bootstrap.sh demo   # install what is missing, build, run the demo
#   scripts/bootstrap.sh test   # install what is missing, build, run all tests
#
# Environment: BUILD_DIR (default build), JOBS (default: all cores).
set -euo pipefail

mode=${1:-demo}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

packages=(cmake ninja-build g++ pkg-config python3 libz3-dev
  nlohmann-json3-dev libcli11-dev catch2 libmlir-19-dev mlir-19-tools
  llvm-19-dev clang-19 libclang-rt-19-dev libboost-context-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

# Each phase's line says how long the run has taken so far (CI's limit is on
# the whole run).
elapsed() { echo "at ${SECONDS} s"; }
echo "== configuring and building ($build, $jobs jobs; $(elapsed))"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$jobs"

case "$mode" in
demo)
  exec "$root/scripts/demo.sh" "$build/tools/ccsynth/ccsynth"
  ;;
test)
  echo "== running the test suite ($(elapsed))"
  (cd "$build" && ctest -j "$jobs" --output-on-failure)
  echo "== GPU check (without a GPU: prepare + runtime-only build; $(elapsed))"
  "$root/scripts/gpu-check.sh" --build-dir "$build" \
    --prepared "$build/gpu-prepared" --gpu-build-dir "$build-gpu" \
    --out "$build/gpu-check-out" --jobs "$jobs"
  if [[ -x "$root/scripts/sanitize-tests.sh" ]]; then
    echo "== parser tests under ASan + UBSan ($(elapsed))"
    "$root/scripts/sanitize-tests.sh"
  fi
  if [[ -x "$root/scripts/fuzz.sh" ]]; then
    echo "== libFuzzer on every reader, ${FUZZ_SECONDS:-30}s each ($(elapsed))"
    "$root/scripts/fuzz.sh"
  fi
  echo "== done ($(elapsed))"
  ;;
*)
  echo "usage: $0 demo|test" >&2
  exit 2
  ;;
esac
