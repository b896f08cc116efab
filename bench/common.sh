# common.sh - sourced by the benchmarks (synth_quality.sh, synth_scale.sh,
# synth_time_limit.sh, compiled_vs_nccl.sh, innetwork.sh) from the
# repository root.
#
# bench_options "$@" reads the options they share, over the defaults the
# script set first: -b BUILD, -l LIMIT (seconds), -t TOPOS, -c COLLS and
# -s SIZES (one size or several, as the script says). It then sets
# CCSYNTH to the build's binary (exiting when it is missing) and OUT to a
# temporary directory removed on exit.
bench_options() {
  local opt OPTIND=1
  while getopts "b:l:t:c:s:" opt; do
    case $opt in
      b) BUILD=$OPTARG ;;
      l) LIMIT=$OPTARG ;;
      t) TOPOS=$OPTARG ;;
      c) COLLS=$OPTARG ;;
      s) SIZES=$OPTARG ;;
      *) exit 2 ;;
    esac
  done
  CCSYNTH=$BUILD/tools/ccsynth/ccsynth
  [ -x "$CCSYNTH" ] || { echo "build ccsynth first ($CCSYNTH)" >&2; exit 1; }
  OUT=$(mktemp -d)
  trap 'rm -rf "$OUT"' EXIT
}

# sim_rows INPUT TOPO [simulate flags...]: "size time_us busbw served" per
# size of $sizes_csv (the script's sizes, comma-separated); served says
# whether MSCCL selects INPUT (an MSCCL XML) at that size: by its
# minBytes..maxBytes, and only where the call's float elements are a
# multiple of nchunksperloop (MSCCL needs the buffer to split
# into whole loops: no power of two is a multiple of 3, and none below the
# loop is a multiple of it). Always 1 for a schedule.
sim_rows() {
  local input=$1 topo=$2 lo hi loop
  shift 2
  # A schedule JSON has none of these attributes: no bound.
  lo=$(grep -o 'minBytes="[0-9]*"' "$input" | head -1 | tr -dc 0-9 || true)
  hi=$(grep -o 'maxBytes="[0-9]*"' "$input" | head -1 | tr -dc 0-9 || true)
  loop=$(grep -o 'nchunksperloop="[0-9]*"' "$input" | head -1 | tr -dc 0-9 ||
    true)
  "$CCSYNTH" simulate "$input" --topo "$topo" --sizes "$sizes_csv" --json \
      "$@" 2> /dev/null |
    python3 -c 'import json,sys
lo, hi, loop = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for r in json.load(sys.stdin)[0]["results"]:
    b = int(r["bytes"])
    print(b, r["time_us"], r["busbw_gbps"],
          int(b >= lo and (hi == 0 or b <= hi) and
              (loop == 0 or b % (4 * loop) == 0)))' \
      "${lo:-0}" "${hi:-0}" "${loop:-0}"
}
