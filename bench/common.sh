# common.sh - sourced by the synthesis benchmarks (synth_quality.sh,
# synth_scale.sh, synth_time_limit.sh) from the repository root.
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
