#!/usr/bin/env bash
# faults.sh APP INTERPOSER PLUGINDIR BADDIR WORK
#
# Plugins the interposer must refuse, each with one clear message per
# process, falling back to NCCL for everything (the application still
# succeeds and every collective reaches the test double):
#   wrong-abi     a library reporting ABI version 999
#   no-symbol     a library without ccsynthPluginGet
#   bad-config    a config file with a malformed line (its valid plugin
#                 line is not used either)
# And a plugin whose launch times out (a ring AllReduce that lost a
# signal): with CCSYNTH_TIMEOUT=2 every rank's ncclAllReduce returns an
# NCCL error (ncclSystemError) instead of hanging, and
# ncclCommGetAsyncError reports it.
set -euo pipefail
app=$1 interposer=$2 plugins=$3 bad=$4 work=$5
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/launch.sh"
w=2
fail=0

check_refused() { # case, expected message pattern
  local name=$1 pattern=$2 r
  for ((r = 0; r < w; r++)); do
    local n
    n=$(grep -c '^ccsynth-nccl: ' "$work/$name.err.$r" || true)
    if [ "$n" -ne 1 ] || ! grep -qE "$pattern" "$work/$name.err.$r"; then
      echo "FAIL: $name rank $r: expected one message matching '$pattern':"
      cat "$work/$name.err.$r"; fail=1
    fi
    if ! grep -q '^ncclAllGather ' "$work/$name.calls.$r" ||
       ! grep -q '^ncclAllReduce .*dtype=2 op=0' "$work/$name.calls.$r"; then
      echo "FAIL: $name rank $r: collectives did not fall back to NCCL"; fail=1
    fi
  done
  echo "$name: $(head -1 "$work/$name.err.0")"
}

launch wrong-abi $w LD_PRELOAD="$interposer" \
  CCSYNTH_PLUGINS="$bad/libwrong-abi.so:$plugins/lib-$w.so" -- "$app"
[ "$launch_rc" -eq 0 ] || { echo "FAIL: wrong-abi run failed"; fail=1; }
# The valid plugin next to it still serves its collectives.
n=$(grep -c "^ccsynth-nccl: " "$work/wrong-abi.err.0" || true)
if [ "$n" -ne 1 ] || ! grep -q 'ABI version 999' "$work/wrong-abi.err.0"; then
  echo "FAIL: wrong-abi: expected one ABI message:"; cat "$work/wrong-abi.err.0"; fail=1
fi
if grep -q '^ncclAllGather .*/2$' "$work/wrong-abi.calls.0"; then
  echo "FAIL: wrong-abi: the valid plugin next to it was not used"; fail=1
fi
echo "wrong-abi: $(head -1 "$work/wrong-abi.err.0")"

launch no-symbol $w LD_PRELOAD="$interposer" \
  CCSYNTH_PLUGINS="$bad/libno-symbol.so" -- "$app"
[ "$launch_rc" -eq 0 ] || { echo "FAIL: no-symbol run failed"; fail=1; }
check_refused no-symbol 'is not a ccsynth plugin: it has no symbol ccsynthPluginGet'

cat >"$work/bad.conf" <<EOT
# a valid line, then a malformed one
plugin $plugins/lib-$w.so
plugins $plugins/lib-$w.so extra
EOT
launch bad-config $w LD_PRELOAD="$interposer" CCSYNTH_PLUGINS="$work/bad.conf" \
  -- "$app"
[ "$launch_rc" -eq 0 ] || { echo "FAIL: bad-config run failed"; fail=1; }
check_refused bad-config "malformed plugin config '.*bad.conf' line 3: expected 'plugin PATH'"

# A good config file is read (relative paths from its directory).
cp "$plugins/lib-$w.so" "$work/lib-good.so"
printf '# the plugins of this job\nplugin lib-good.so\n' >"$work/good.conf"
launch good-config $w LD_PRELOAD="$interposer" \
  CCSYNTH_PLUGINS="$work/good.conf" -- "$app"
[ "$launch_rc" -eq 0 ] || { echo "FAIL: good-config run failed"; fail=1; }
if grep -q '^ncclAllGather .*dtype=2 comm=[^ ]*/2$' "$work/good-config.calls.0" ||
   grep -q . "$work/good-config.err.0"; then
  echo "FAIL: good-config: the plugin of a valid config was not used"; fail=1
fi

# The launch that times out: 4 ranks.
start=$(date +%s)
launch timeout 4 LD_PRELOAD="$interposer" \
  CCSYNTH_PLUGINS="$plugins/lib-mutant-4.so" CCSYNTH_TIMEOUT=2 \
  -- "$app" --expect-error
took=$(($(date +%s) - start))
cat "$work"/timeout.out.*
if [ "$launch_rc" -ne 0 ]; then
  echo "FAIL: a rank did not get an NCCL error from the timed-out launch"; fail=1
fi
grep -h 'timed out waiting for' "$work"/timeout.err.* | head -1
grep -q 'returning ncclSystemError' "$work"/timeout.err.* ||
  { echo "FAIL: no report of the timed-out launch"; fail=1; }
echo "timed-out launch: every rank returned in ${took} s"
[ $fail -eq 0 ] && echo "faults: refused with one message each, fell back to NCCL"
exit $fail
