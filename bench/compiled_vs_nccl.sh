#!/usr/bin/env bash
# compiled_vs_nccl.sh - what `ccsynth compile` writes against what NCCL runs,
# at the step level (the calibrated model of what runs; docs/calibration.md).
#
# For every machine and collective it synthesizes a schedule (`ccsynth synth
# --time-limit LIMIT`), compiles it with no flags (the tuned compile, which
# may write NCCL's program instead and says so) and times the MSCCL XML
# with `ccsynth simulate --level steps`. In the same run it builds the
# NCCL-shaped program of that collective on that machine (`ccsynth baseline
# ring`, `direct` for AllToAll, and for AllReduce on several nodes also
# `tree`, the faster of the two at each size; in place as nccl-tests'
# quoted figures are) and times it at each size with the best channel count (1..32) and
# protocol (LL, LL128, Simple) for that size, i.e. NCCL's program as if its
# tuner chose perfectly. It prints one row per (machine, collective, size):
# ccsynth's step-level time and busbw, the NCCL-shaped ones, the published
# NCCL figure where docs/calibration.md has one (for reference only: the
# ratios are model against model), the chunk-level time of the
# synthesized schedule, and the ratios
#   nccl/ccsynth     NCCL-shaped time / ccsynth time (>= 1: ccsynth as fast)
#   step/chunk       at 1G: the busbw of the schedule's own compile tuned
#                    for 1G (--min-bytes 1G --no-fallback) / its chunk-level
#                    busbw (what the lowering keeps of the schedule)
# and, in "dir us" / "nccl/dir", the same for `--target msccl-dir` with no
# flags (one XML per size range, tuned per size: each size timed with the
# file MSCCL selects for it), then the geometric means the project's goals
# are stated in. NCCL's programs are timed as NCCL's own kernel runs them
# (`simulate --target nccl`: no MSCCL interpreter costs). With dgx-h100 in
# the matrix it then prints MSCCL's own bar at small sizes: MSCCL's
# AllReduce files for ND H100 v5 (when the shared calibration folder or
# MSCCL_DIR has them) and ccsynth's msccl-dir of the schedule synthesized
# for dgx-h100, both timed by the step model at 1K, 64K, 1M and 16M. A
# benchmark, not a test: the whole matrix synthesizes 24 schedules.
#
# Usage: bench/compiled_vs_nccl.sh [-b BUILD] [-l SECONDS] [-t TOPOS]
#                                  [-c COLLS] [-s SIZES]
#   e.g. bench/compiled_vs_nccl.sh -t "dgx-a100" -c allreduce -l 10
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
LIMIT=30
TOPOS="dgx1 dgx-a100 dgx-h100 ndv2x2 dgx-a100x2 dgx-h100x2"
COLLS="allgather reducescatter allreduce alltoall"
SIZES="1K 1M 64M 1G"
. bench/common.sh
bench_options "$@"
sizes_csv=$(echo "$SIZES" | tr ' ' ',')

# step_times FILE TOPO [compile flags...]: sim_rows of the program FILE (a
# schedule) compiles to with the flags, at the step level.
step_times() {
  local file=$1 topo=$2
  shift 2
  "$CCSYNTH" compile "$file" -o "$OUT/p.xml" --no-predict "$@" \
      > /dev/null 2> "$OUT/compile.log" || return 1
  sim_rows "$OUT/p.xml" "$topo" --level steps
}

# nccl_times FILE TOPO [simulate flags...]: sim_rows of NCCL's program FILE
# (a baseline schedule) as NCCL's own kernel runs it (no MSCCL interpreter
# costs).
nccl_times() {
  local file=$1 topo=$2
  shift 2
  sim_rows "$file" "$topo" --level steps --target nccl "$@"
}

# dir_times FILE TOPO: the tuned msccl-dir of FILE (one XML per size range);
# each size timed with the file MSCCL selects for it.
dir_times() {
  local file=$1 topo=$2 x
  rm -rf "$OUT/dir"
  "$CCSYNTH" compile "$file" --target msccl-dir -o "$OUT/dir" --no-predict \
      > /dev/null 2> "$OUT/dir.log" || return 1
  for x in "$OUT"/dir/msccl-algorithms/*; do
    [ -e "$x" ] || continue
    sim_rows "$x" "$topo" --level steps | awk '$4 == 1'
  done
}

rows=$OUT/rows.txt
: > "$rows"
for topo in $TOPOS; do
  for coll in $COLLS; do
    kind=ring
    [ "$coll" = alltoall ] && kind=direct
    ip=--inplace
    [ "$coll" = alltoall ] && ip=
    # NCCL-shaped: the best configuration per size; for AllReduce on
    # several nodes of its ring and its double binary tree, the faster
    # (NCCL's tuner picks either there).
    kinds=$kind
    case "$coll:$topo" in allreduce:*x[0-9]*) kinds="ring tree" ;; esac
    : > "$OUT/nccl.txt"
    for kind in $kinds; do
      "$CCSYNTH" baseline "$kind" -c "$coll" -t "$topo" $ip \
        -o "$OUT/nccl.json" > /dev/null 2>&1 || continue
      cp "$OUT/nccl.json" "$OUT/nccl-$topo-$coll-$kind.json"
      for proto in LL LL128 Simple; do
        for inst in 1 2 4 8 16 32; do
          nccl_times "$OUT/nccl.json" "$topo" --instances "$inst" \
            --protocol "$proto" >> "$OUT/nccl.txt" || break
        done
      done
    done
    # ccsynth: synthesize, compile with no flags.
    : > "$OUT/ccs.txt"
    : > "$OUT/dirt.txt"
    rm -f "$OUT/dir.ok"
    : > "$OUT/chunk.txt"
    : > "$OUT/own.txt"
    note=""
    if "$CCSYNTH" synth -t "$topo" -c "$coll" --time-limit "$LIMIT" \
        -o "$OUT/s.json" > "$OUT/synth.log" 2>&1; then
      cp "$OUT/s.json" "$OUT/keep-$topo-$coll.json"
      if step_times "$OUT/s.json" "$topo" > "$OUT/ccs.txt"; then
        grep -qE "writing it instead|writing NCCL.s" "$OUT/compile.log" &&
          note=ring
        sim_rows "$OUT/s.json" "$topo" > "$OUT/chunk.txt"
        # What the lowering keeps of the schedule at 1G: its own compile
        # tuned for 1G (no NCCL program in its place).
        step_times "$OUT/s.json" "$topo" --min-bytes 1G --no-fallback \
          > "$OUT/own.txt" 2> /dev/null || : > "$OUT/own.txt"
        dir_times "$OUT/s.json" "$topo" > "$OUT/dirt.txt" &&
          touch "$OUT/dir.ok" || true
      else
        note="compile failed: $(grep -m1 error "$OUT/compile.log" | cut -c1-60)"
      fi
    else
      note="synth failed"
    fi
    python3 - "$topo" "$coll" "$OUT/ccs.txt" "$OUT/nccl.txt" \
        "$OUT/chunk.txt" "$note" docs/calibration.md "$OUT/dirt.txt" \
        "$OUT/own.txt" >> "$rows" <<'PY'
import os, sys, re
topo, coll, ccs, nccl, chunk, note, calib, dirt, own = sys.argv[1:10]
def table(path):
    out = {}
    for line in open(path):
        f = line.split()
        b, t, bw = int(f[0]), float(f[1]), float(f[2])
        served = len(f) < 4 or f[3] == '1'
        if b not in out or t < out[b][0]:
            out[b] = (t, bw, served)
    return out
c, n, k, d = table(ccs), table(nccl), table(chunk), table(dirt)
o = table(own)
# Sizes no file of the directory serves run NCCL (when it was written).
dir_written = os.path.exists(os.path.join(os.path.dirname(dirt), 'dir.ok'))
for b in n:
    if dir_written and b not in d:
        d[b] = n[b]
# Outside the XML's minBytes..maxBytes MSCCL runs NCCL: that is what runs.
for b, (t, bw, served) in list(c.items()):
    if not served and b in n:
        c[b] = (n[b][0], n[b][1], False)
pub = {}
rows = False
for line in open(calib):
    if 'calibration-table:begin' in line: rows = True; continue
    if 'calibration-table:end' in line: break
    f = [x.strip() for x in line.split('|')]
    # NCCL's published figures only: the rows of MSCCL's own programs
    # (program `msccl ...`) are another program.
    if rows and len(f) > 10 and f[2] == topo and f[3] == coll and \
            not f[10].startswith('msccl'):
        m = re.match(r'(\d+)([KMG])', f[4])
        b = int(m.group(1)) * {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}[m.group(2)]
        pub.setdefault(b, f'{f[5]} {"us" if f[6] == "us" else "GB/s"}')
for b in sorted(set(c) | set(n)):
    nan3 = (float('nan'), float('nan'), True)
    ct, cb, served = c.get(b, nan3)
    nt, nb, _ = n.get(b, nan3)
    kt, kb, _ = k.get(b, nan3)
    dt, db, _ = d.get(b, nan3)
    cell = note if served else 'NCCL runs (MSCCL does not select the XML)'
    # step/chunk at 1G: the schedule's own compile tuned for 1G against
    # the schedule's chunk level.
    rb = o.get(b, nan3)[1] if b == 1 << 30 else float('nan')
    print(topo, coll, b, ct, rb, nt, nb, kb, pub.get(b, '-').replace(' ', '_'),
          dt, cell.replace(' ', '_') or '-', cb)
PY
  done
done

python3 - "$rows" <<'PY'
import sys, math
def fmt_size(b):
    for u, s in ((1 << 30, 'G'), (1 << 20, 'M'), (1 << 10, 'K')):
        if b >= u and b % u == 0:
            return f'{b // u}{s}'
    return str(b)
multi = {'ndv2x2', 'dgx-a100x2', 'dgx-h100x2'}
print(f'{"machine":<11} {"collective":<13} {"size":>5} {"ccsynth us":>11} '
      f'{"busbw":>7} {"nccl-shape us":>13} {"busbw":>7} {"published":>12} '
      f'{"nccl/ccs":>8} {"dir us":>10} {"nccl/dir":>8} {"step/chunk":>10}  note')
small, big, ratios, steps = [], [], [], []
dsmall, dbig, dratios = [], [], []
for line in open(sys.argv[1]):
    topo, coll, b, ct, rb, nt, nb, kb, pub, dt, note, cb = line.split()
    b = int(b)
    ct, rb, nt, nb, kb, dt, cb = map(float, (ct, rb, nt, nb, kb, dt, cb))
    r = nt / ct if ct == ct and nt == nt else float('nan')
    rd = nt / dt if dt == dt and nt == nt else float('nan')
    sc = rb / kb if kb == kb and kb > 0 and rb == rb else float('nan')
    print(f'{topo:<11} {coll:<13} {fmt_size(b):>5} {ct:11.2f} {cb:7.2f} '
          f'{nt:13.2f} {nb:7.2f} {pub.replace("_", " "):>12} {r:8.3f} '
          f'{dt:10.2f} {rd:8.3f} {sc:10.3f}  {note.replace("_", " ")}')
    if r == r:
        ratios.append(r)
        if b <= 1 << 20: small.append(r)
        if b >= 64 << 20 and topo in multi: big.append(r)
    if rd == rd:
        dratios.append(rd)
        if b <= 1 << 20: dsmall.append(rd)
        if b >= 64 << 20 and topo in multi: dbig.append(rd)
    if b == 1 << 30 and sc == sc:
        steps.append(sc)
def geo(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float('nan')
print()
print(f'nccl/ccsynth: min {min(ratios) if ratios else float("nan"):.3f} over '
      f'{len(ratios)} cells (goal >= 1.0 everywhere)')
print(f'geo-mean nccl/ccsynth, cells <= 1M: {geo(small):.3f} (goal >= 1.15)')
print(f'geo-mean nccl/ccsynth, multi-node cells >= 64M: {geo(big):.3f} '
      f'(goal >= 1.15)')
print(f'msccl-dir (tuned per size): min nccl/dir {min(dratios) if dratios else float("nan"):.3f} '
      f'over {len(dratios)} cells; geo-mean <= 1M {geo(dsmall):.3f}, '
      f'multi-node >= 64M {geo(dbig):.3f}')
print(f'compiled / chunk-level busbw at 1G of the synthesized schedules '
      f'(their own compile tuned for 1G): min '
      f'{min(steps) if steps else float("nan"):.3f}, geo-mean {geo(steps):.3f} '
      f'over {len(steps)} (goal >= 0.70)')
PY

# MSCCL's own bar at small sizes: its hand-written AllReduce programs for
# ND H100 v5 (the dgx-h100 shape; Azure's msccl-scheduler files, in the
# shared calibration folder when it is there; -x DIR names another), timed
# by the same model as ccsynth's tuned msccl-dir of the schedule
# synthesized above (each size with the file MSCCL selects for it): a
# model-against-model ratio. MSCCL's measured time of its own file is
# printed beside its model time (bench/model_vs_hardware.py has every row),
# never set against ccsynth's model time.
case " $TOPOS " in *" dgx-h100 "*) ;; *) exit 0 ;; esac
case " $COLLS " in *" allreduce "*) ;; *) exit 0 ;; esac
MSCCL_DIR=${MSCCL_DIR:-../shared/calibration/msccl-ndv5}
[ -e "$OUT/keep-dgx-h100-allreduce.json" ] || exit 0
if [ ! -e "$MSCCL_DIR/ap-1pass.xml" ]; then
  echo
  echo "(no $MSCCL_DIR: MSCCL's own programs are not timed; set MSCCL_DIR)"
  exit 0
fi
echo
echo "MSCCL's AllReduce programs for ND H100 v5 against ccsynth's msccl-dir, both timed by the step model (us):"
printf '%-6s %-10s %10s %12s %12s %12s %10s\n' size "msccl file" \
  "measured" "msccl model" "ccsynth" "nccl kernel" "msccl/ccs"
sizes_csv=1K,64K,1M,16M
: > "$OUT/msccl.txt"
for f in ap-1pass ap4ll r48ll r48ll128; do
  sim_rows "$MSCCL_DIR/$f.xml" dgx-h100 --level steps |
    awk -v f=$f '$4 == 1 { print $0, f }' >> "$OUT/msccl.txt"
done
: > "$OUT/small-nccl.txt"
if [ -e "$OUT/nccl-dgx-h100-allreduce-ring.json" ]; then
  for proto in LL LL128 Simple; do
    for inst in 1 2 4 8 16 32; do
      nccl_times "$OUT/nccl-dgx-h100-allreduce-ring.json" dgx-h100 \
        --instances "$inst" --protocol "$proto" >> "$OUT/small-nccl.txt" ||
        break
    done
  done
fi
dir_times "$OUT/keep-dgx-h100-allreduce.json" dgx-h100 > "$OUT/small-dir.txt" ||
  : > "$OUT/small-dir.txt"
python3 - "$OUT/msccl.txt" "$OUT/small-nccl.txt" "$OUT/small-dir.txt" <<'PY'
import sys
msccl_rows, nccl, ccs = sys.argv[1:4]
# Azure/msccl docs/performance-nd-h100-v5.md, MSCCL executor on NCCL 2.18.3.
measured = {1024: 7.50, 65536: 10.36, 1048576: 22.31, 16777216: 115.7}
def best(path):
    out = {}
    for line in open(path):
        f = line.split()
        b, t = int(f[0]), float(f[1])
        out[b] = min(out.get(b, t), t)
    return out
n, c = best(nccl), best(ccs)
for line in open(msccl_rows):
    f = line.split()
    b, t, name = int(f[0]), float(f[1]), f[4]
    nt = n.get(b, float('nan'))
    ct = c.get(b, nt)
    print(f'{b // 1024:5d}K {name:<10} {measured[b]:10.2f} {t:12.2f} '
          f'{ct:12.2f} {nt:12.2f} {t / ct:10.3f}')
PY
