#!/usr/bin/env bash
# ring-alltoall-fit.sh CCSYNTH WORKDIR
#
# The ring AllToAll on dgx2x2 (32 ranks, 127,232 one-chunk transfers)
# compiles for MSCCL and MSCCL++: as scheduled its one-chunk steps overflow
# every channel, so `compile` joins the chunks each hop forwards into
# multi-chunk steps (ccl-coalesce-transfers) and says so. The XML stays
# within msccl-executor-nccl's limits (64 steps per threadblock, 32
# threadblocks per channel, 32 channels), survives --check-roundtrip
# (validation, bounded-buffer deadlock check, proof of the recovered
# schedule), and both outputs pass compile's own checks.
set -uo pipefail
cc=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cc" baseline ring -c alltoall -t dgx2x2 -o a2a.json >/dev/null ||
  fail "baseline ring alltoall on dgx2x2"

"$cc" compile a2a.json --check-roundtrip --no-predict -o a2a.xml 2>xml.err ||
  { cat xml.err >&2; fail "compile to msccl-xml"; }
grep -q "ccl-coalesce-transfers" xml.err ||
  fail "no note that transfers were joined"
# Per threadblock: steps; per (gpu, channel): threadblocks; joined steps.
read -r steps tbs chans joined <<<"$(awk '
  /<gpu / { match($0, /id="[0-9]+"/); gpu = substr($0, RSTART + 4, RLENGTH - 5) }
  /<tb / { match($0, /chan="[0-9]+"/); ch = substr($0, RSTART + 6, RLENGTH - 7)
           n = ++perChan[gpu "," ch]; if (n > tbs) tbs = n
           if (ch + 1 > chans) chans = ch + 1; cur = 0 }
  /<step / { if (++cur > steps) steps = cur
             if ($0 !~ /cnt="1"/) joined++ }
  END { print steps + 0, tbs + 0, chans + 0, joined + 0 }' a2a.xml)"
echo "msccl-xml: at most $steps steps per threadblock, $tbs threadblocks" \
  "per channel, $chans channels, $joined multi-chunk steps"
[ "$steps" -ge 1 ] && [ "$steps" -le 64 ] ||
  fail "$steps steps in a threadblock (MSCCL_MAX_NUM_STEPS is 64)"
[ "$tbs" -le 32 ] || fail "$tbs threadblocks on one channel (at most 32)"
[ "$chans" -le 32 ] || fail "$chans channels (at most 32)"
[ "$joined" -gt 0 ] || fail "no step moves more than one chunk"

"$cc" compile a2a.json --target mscclpp-json --no-predict -o a2a-plan.json \
  2>plan.err || { cat plan.err >&2; fail "compile to mscclpp-json"; }
grep -q "ccl-coalesce-transfers" plan.err ||
  fail "no note that transfers were joined in the plan"
grep -q '"collective": *"alltoall"' a2a-plan.json ||
  fail "the plan is not an alltoall"
echo "mscclpp-json: $(wc -c <a2a-plan.json) bytes, checked by compile"
