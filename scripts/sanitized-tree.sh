# sanitized-tree.sh: sourced by sanitize-tests.sh and fuzz.sh. One clang
# tree serves both: ASan + UBSan, libFuzzer coverage on the readers, no
# MLIR and no CUDA, optimized lightly (-O1, line tables only) because it
# is built once per CI run and its tests are short.
#
# Environment: SAN_BUILD_DIR (default build-san), JOBS (default: all
# cores), CLANG_CC / CLANG_CXX (default clang-19 / clang++-19).
san_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
san_build=${SAN_BUILD_DIR:-$san_root/build-san}
san_jobs=${JOBS:-$(nproc)}

# san_build_targets TARGET...: configure the tree (a no-op when it is) and
# build TARGETs in it.
san_build_targets() {
  local cc=${CLANG_CC:-clang-19} cxx=${CLANG_CXX:-clang++-19}
  if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "$(basename "$0"): $cxx not found; install clang-19 and" \
      "libclang-rt-19-dev" >&2
    return 1
  fi
  CC=$cc CXX=$cxx cmake -S "$san_root" -B "$san_build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCCSYNTH_SANITIZE=ON -DCCSYNTH_FUZZERS=ON -DCCSYNTH_ENABLE_MLIR=OFF \
    >/dev/null
  cmake --build "$san_build" -j "$san_jobs" --target "$@"
}

# Any report is fatal (the build also uses -fno-sanitize-recover=all).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
