#!/usr/bin/env bash
# innetwork.sh - AllReduce (or, with -c, AllGather or ReduceScatter) on
# machines whose switches reduce (NVLink SHARP, IB SHARP), at the step level: ccsynth's default output against NCCL's
# in-network algorithm and against the best point-to-point program, in one
# run.
#
# For every machine it prints, per size:
#   ccsynth        `ccsynth synth -c COLLECTIVE --time-limit LIMIT` compiled
#                  with no flags (the tuned compile, which may write NCCL's
#                  ring instead), timed by `simulate --level steps`; at a
#                  size MSCCL does not select that XML for, NCCL runs (its
#                  best is printed, note "NCCL-runs-(N)"; where compile
#                  writes nothing, being slower than NCCL at every size,
#                  note "not-written" and the program is timed as "(N)")
#   nccl nvls      `ccsynth baseline nvls` (NVLS on one node, NVLS-tree on
#                  several), timed by the NVLS runtime model
#                  (docs/calibration.md, "In-network reduction")
#   nccl sharp     the faster of `ccsynth baseline collnet` (NCCL's CollNet
#                  Direct through IB SHARP) and `ccsynth baseline
#                  nvls-sharp` (NCCL's NVLS with SHARP across nodes), on
#                  several nodes, timed by the same runtime model
#   nccl ring      NCCL's ring (`baseline ring --inplace` timed by
#                  `simulate --level steps --target nccl`, as NCCL's kernel
#                  runs it: a ring longer than MSCCL's 64 steps per
#                  threadblock on one threadblock per channel), with 1 to
#                  32 instances, Simple and LL128: the best per size, as if
#                  NCCL's tuner chose perfectly; the configuration the
#                  calibration table's ring rows use)
#   best p2p       the faster of ccsynth and NCCL's ring
#   in-net sched   `ccsynth synth --in-network --size S --no-step-level`:
#                  the best of NCCL's NVLS/CollNet/NVLS+SHARP and, on
#                  several nodes, ccsynth's NVLS with rail rings, alone and
#                  mixed with point-to-point schedules on shares of the
#                  buffer, timed by the same runtime model (a schedule's
#                  prediction)
#   in-net gen     the same run's candidates compiled to ccsynth's
#                  generated code (`compile --target cuda`: switch
#                  threadblocks beside the point-to-point program), timed
#                  at the step level: the fastest, which is what synth
#                  writes when it beats the point-to-point program
#   plugin         what a CUDA plugin built from that run's output runs
#                  (MSCCL XML has no switch operations): `compile --target
#                  cuda` with no flags, which serves only the sizes where
#                  its program is faster than what NCCL reaches (its ring
#                  or tree, NVLS, NVLS-tree, CollNet or NVLS+SHARP) and
#                  writes nothing where it is faster nowhere; the
#                  interposer sends the other sizes to NCCL (each run of
#                  sizes where it is faster is a descriptor of its own).
#                  Its ratio to NCCL is the compile's own (printed with the
#                  ranges it serves), 1.00 where NCCL runs
# and the ratios ccsynth / NCCL's best (its in-network algorithm or its
# in-network algorithm, IB SHARP or ring, whichever is faster), best
# p2p / NCCL's best, in-net sched / NCCL's best and in-net gen / NCCL's
# best. The goal is ccsynth >= 1.0 x NCCL's best everywhere and > 1.1 x on
# several nodes; the last lines say where it holds. MSCCL XML cannot carry
# switch transfers, so on these machines the first ratio shows what MSCCL
# runs, the in-net gen ratio what ccsynth's generated code reaches, and
# the plugin ratio what an application that loads ccsynth's CUDA plugin
# through the interposer runs.
# ndv5x4 and ndv5x8 are H100 nodes whose network does not reduce (no
# SHARP): there NCCL's best is its ring or NVLS-tree, and the last line
# compares with them alone.
# A benchmark, not a test: gb200-nvl72, dgx-h100x8 and ndv5x8 synthesize
# 64-72 ranks.
#
# With -c allgather or -c reducescatter the same columns time that
# collective: NCCL's NVLS builds it on one node only (NVLS-tree is
# AllReduce's), and its IB SHARP forms go along the rails where every GPU
# has a NIC of its own.
#
# Usage: bench/innetwork.sh [-b BUILD] [-l SECONDS] [-t TOPOS] [-s SIZES]
#                           [-c COLLECTIVE]
#   e.g. bench/innetwork.sh -t "dgx-h100 dgx-b200" -l 10
#        bench/innetwork.sh -c allgather -t "dgx-h100x2 dgx-b200x4" -l 10
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
LIMIT=30
TOPOS="dgx-h100 dgx-h100x2 dgx-h100x8 dgx-b200 dgx-b200x4 gb200-nvl72 ndv5x4 ndv5x8"
COLLS=allreduce
SIZES="64M 1G"
. bench/common.sh
bench_options "$@"
sizes_csv=$(echo "$SIZES" | tr ' ' ',')
COLL=$COLLS
case $COLL in
  allreduce | allgather | reducescatter) ;;
  *) echo "innetwork.sh: -c takes one of allreduce, allgather, reducescatter" >&2
     exit 2 ;;
esac

# busbw INPUT TOPO: sim_rows (bench/common.sh) at the step level.
busbw() {
  sim_rows "$1" "$2" --level steps
}

# compiled INPUT TOPO [compile flags...]: busbw of what the compile writes
# for INPUT (with no flags: the tuned compile).
compiled() {
  local input=$1 topo=$2
  shift 2
  "$CCSYNTH" compile "$input" -o "$OUT/p.xml" --no-predict "$@" > /dev/null \
      2> "$OUT/compile.log" || return 1
  busbw "$OUT/p.xml" "$topo"
}

rows=$OUT/rows.txt
: > "$rows"
for topo in $TOPOS; do
  : > "$OUT/ccs.txt"
  : > "$OUT/nvls.txt"
  : > "$OUT/ring.txt"
  : > "$OUT/sharp.txt"
  : > "$OUT/innet.txt"
  : > "$OUT/gen.txt"
  : > "$OUT/plugin.txt"
  note=-
  if "$CCSYNTH" synth -t "$topo" -c "$COLL" --time-limit "$LIMIT" \
      -o "$OUT/s.json" > "$OUT/synth.log" 2>&1; then
    if ! compiled "$OUT/s.json" "$topo" > "$OUT/ccs.txt"; then
      note=compile-failed
      # Slower than what NCCL runs at every size: compile writes nothing
      # and NCCL runs; the program itself (--no-fallback) is still timed
      # for the point-to-point column, as not selected.
      if grep -q "nothing written" "$OUT/compile.log"; then
        note=not-written
        compiled "$OUT/s.json" "$topo" --no-fallback |
          awk '{ $4 = 0; print }' > "$OUT/ccs.txt" || true
      fi
    fi
    grep -qE "writing it instead|writing NCCL.s" "$OUT/compile.log" &&
      note=ring-written
  else
    note=synth-failed
  fi
  if "$CCSYNTH" baseline nvls -c "$COLL" -t "$topo" -o "$OUT/n.json" \
      > /dev/null 2>&1; then
    busbw "$OUT/n.json" "$topo" > "$OUT/nvls.txt"
  fi
  if "$CCSYNTH" baseline collnet -c "$COLL" -t "$topo" -o "$OUT/c.json" \
      > /dev/null 2>&1; then
    busbw "$OUT/c.json" "$topo" > "$OUT/sharp.txt"
  fi
  if "$CCSYNTH" baseline nvls-sharp -c "$COLL" -t "$topo" \
      -o "$OUT/ns.json" > /dev/null 2>&1; then
    busbw "$OUT/ns.json" "$topo" >> "$OUT/sharp.txt"
  fi
  if "$CCSYNTH" baseline ring -c "$COLL" -t "$topo" --inplace \
      -o "$OUT/r.json" > /dev/null 2>&1; then
    for proto in Simple LL128; do
      for inst in 1 2 4 8 16 32; do
        # (Some configurations do not run, e.g. the deadlock of 16
        # instances of a 64-rank ring in 8-slot buffers: skipped quietly.)
        sim_rows "$OUT/r.json" "$topo" --level steps --target nccl \
          --instances "$inst" --protocol "$proto" >> "$OUT/ring.txt" \
          2> /dev/null || true
      done
    done
  fi
  # The in-network search's best candidate at each size (its summary line
  # "best: NAME  T us  B GB/s"), as "bytes name busbw".
  for s in $SIZES; do
    if "$CCSYNTH" synth -t "$topo" -c "$COLL" --time-limit "$LIMIT" \
        --in-network --no-step-level -q --size "$s" -o "$OUT/m.json" \
        > "$OUT/innet.log" 2>&1; then
      python3 - "$s" "$OUT/innet.log" "$OUT/innet.txt" "$OUT/gen.txt" <<'PY'
import re, sys
units = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}
s = sys.argv[1]
b = int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)
gen, compiled = None, False
with open(sys.argv[3], 'a') as sched:
    for line in open(sys.argv[2]):
        m = re.match(r'\s+best: (.*?)\s+([0-9.]+) us\s+([0-9.]+) GB/s', line)
        if m:
            print(b, m.group(1).replace(' ', '_'), m.group(3), file=sched)
        if 'as generated code' in line:
            compiled = True
            continue
        m = re.match(r'\s+(\S.*?)\s+([0-9.]+) us\s+([0-9.]+) GB/s', line)
        if compiled and m and (gen is None or float(m.group(3)) > gen[1]):
            gen = (m.group(1).replace(' ', '_'), float(m.group(3)))
if gen:
    with open(sys.argv[4], 'a') as out:
        print(b, gen[0], gen[1], file=out)
PY
      # What the CUDA plugin of that output serves at this size.
      "$CCSYNTH" compile "$OUT/m.json" --target cuda -o "$OUT/m.cu" \
          > /dev/null 2> "$OUT/plugin.log" || true
      python3 - "$s" "$OUT/plugin.log" "$OUT/plugin.txt" <<'PY'
import re, sys
units = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
def parse(s):
    # formatBytes' forms: 0B, 512B, 64K, 1.5M, 1G
    m = re.fullmatch(r'([0-9.]+)([KMGT]?)B?', s)
    return int(float(m.group(1)) * units[m.group(2)])
b = parse(sys.argv[1])
log = open(sys.argv[2]).read()
ratio, why = 1.0, 'nccl'
# "serves every size" or "serves only [A, B)[, [C, D)...] and [E, F)": a
# descriptor per range.
m = re.search(r'note: serves (every size|only .*?):', log)
if m:
    ranges = [(parse(lo), None if hi == 'no bound' else parse(hi))
              for lo, hi in re.findall(r'\[(\S+), ([^)]*)\)', m.group(1))]
    if m.group(1) == 'every size':
        ranges = [(0, None)]
    r = re.search(r'\b' + re.escape(sys.argv[1]) + r' ([0-9.]+)x', log)
    if r and any(b >= lo and (hi is None or b < hi) for lo, hi in ranges):
        ratio, why = float(r.group(1)), 'gen'
elif 'nothing written' in log:
    why = 'nccl(slower)'
elif 'error' in log:
    why = 'nccl(no-lower)'
with open(sys.argv[3], 'a') as out:
    print(b, ratio, why, file=out)
PY
    fi
  done
  python3 - "$topo" "$note" "$OUT/ccs.txt" "$OUT/nvls.txt" \
      "$OUT/ring.txt" "$OUT/sharp.txt" "$OUT/innet.txt" "$OUT/gen.txt" \
      "$OUT/plugin.txt" >> "$rows" <<'PY'
import sys
topo, note, ccs, nvls, ring, sharp, innet, genf, pluginf = sys.argv[1:10]
def table(path, servedOnly=True):
    out = {}
    for f in (l.split() for l in open(path)):
        if f and (not servedOnly or f[3] == '1'):
            out[int(f[0])] = max(out.get(int(f[0]), 0.0), float(f[2]))
    return out
c, n, r, sh = table(ccs), table(nvls), table(ring), table(sharp)
own = table(ccs, servedOnly=False)
mix = {int(f[0]): (f[1], float(f[2]))
       for f in (l.split() for l in open(innet)) if f}
gen = {int(f[0]): (f[1], float(f[2]))
       for f in (l.split() for l in open(genf)) if f}
plugin = {int(f[0]): (float(f[1]), f[2])
          for f in (l.split() for l in open(pluginf)) if f}
nan = float('nan')
for b in sorted(set(own) | set(n) | set(r) | set(sh)):
    # served: MSCCL selects ccsynth's XML at this size (else NCCL runs).
    name, bw = mix.get(b, ('-', nan))
    gname, gbw = gen.get(b, ('-', nan))
    pr, pwhy = plugin.get(b, (nan, '-'))
    print(topo, b, own.get(b, nan), int(b in c), n.get(b, nan),
          r.get(b, nan), sh.get(b, nan), bw, name, gbw, gname, pr, pwhy,
          note)
PY
done

python3 - "$rows" "$COLL" <<'PY'
import math, re, sys
coll = {'allreduce': 'AllReduce', 'allgather': 'AllGather',
        'reducescatter': 'ReduceScatter'}[sys.argv[2]]
def size(b):
    for u, s in ((1 << 30, 'G'), (1 << 20, 'M'), (1 << 10, 'K')):
        if b >= u and b % u == 0:
            return f'{b // u}{s}'
    return str(b)
def cell(x):
    return '-' if math.isnan(x) else f'{x:.1f}'
def best(*xs):
    xs = [x for x in xs if not math.isnan(x)]
    return max(xs) if xs else float('nan')
print(f'{coll} busbw (GB/s) at the step level; ratios of busbw (>= 1: '
      'at least as fast as NCCL)')
print(f'{"machine":<13} {"size":>5} {"ccsynth":>9} {"nccl nvls":>9} '
      f'{"nccl sharp":>10} {"nccl ring":>9} {"best p2p":>8} '
      f'{"runs/nccl":>9} {"p2p/nccl":>8} {"in-net sched":>12} '
      f'{"sched/nccl":>10} {"in-net gen":>10} {"gen/nccl":>8} '
      f'{"plugin/nccl":>11}  note')
ratios, multi, own_runs, rows = [], [], 0, 0
nosharp = {'sched': [], 'gen': [], 'plugin': []}
sched, sched_multi, gens, gens_multi = [], [], [], []
plugins, plugins_multi, plugin_gen = [], [], 0
for line in open(sys.argv[1]):
    (topo, b, c, served, n, r, sh, mx, mixname, gx, genname, pr, pwhy,
     note) = line.split()
    b, c, served, n, r, sh, mx, gx, pr = (int(b), float(c), served == '1',
                                          float(n), float(r), float(sh),
                                          float(mx), float(gx), float(pr))
    nccl = best(n, r, sh)
    p2p = best(c, r)
    # What runs: ccsynth's XML where MSCCL selects it, else NCCL's best.
    runs = c if served else nccl
    rc = runs / nccl if nccl == nccl and runs == runs else float('nan')
    rp = p2p / nccl if nccl == nccl and p2p == p2p else float('nan')
    ratio = lambda x: '-' if math.isnan(x) else f'{x:.2f}'
    mark = '' if served or math.isnan(c) else ' (N)'
    rs = mx / nccl if nccl == nccl and mx == mx else float('nan')
    rg = gx / nccl if nccl == nccl and gx == gx else float('nan')
    print(f'{topo:<13} {size(b):>5} {cell(c) + mark:>9} {cell(n):>9} '
          f'{cell(sh):>10} {cell(r):>9} {cell(p2p):>8} {ratio(rc):>9} '
          f'{ratio(rp):>8} {cell(mx):>12} {ratio(rs):>10} {cell(gx):>10} '
          f'{ratio(rg):>8} {ratio(pr):>11}  {note} '
          f'({mixname.replace("_", " ")}; gen: {genname.replace("_", " ")}; '
          f'plugin runs {pwhy})')
    if not math.isnan(pr):
        plugins.append(pr)
        plugin_gen += pwhy == 'gen'
        if re.search(r'x\d+$', topo):
            plugins_multi.append(pr)
    if not math.isnan(rs):
        sched.append(rs)
        if re.search(r'x\d+$', topo):
            sched_multi.append(rs)
    if not math.isnan(rg):
        gens.append(rg)
        if re.search(r'x\d+$', topo):
            gens_multi.append(rg)
    if re.search(r'x\d+$', topo) and math.isnan(sh):
        for k, x in (('sched', rs), ('gen', rg), ('plugin', pr)):
            if not math.isnan(x):
                nosharp[k].append(x)
    rows += 1
    own_runs += served
    if not math.isnan(rc):
        ratios.append(rc)
        if re.search(r'x\d+$', topo):  # several nodes (dgx-h100x2)
            multi.append(rc)
print('(N): MSCCL does not select ccsynth\'s XML at that size (outside its '
      'range, or not a multiple of its loop), so NCCL runs')
print(f'ccsynth\'s own program runs at {own_runs} of {rows} sizes')
if ratios:
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f'what runs / NCCL best: geomean {g:.2f} over {len(ratios)} '
          f'rows; >= 1.0 everywhere: '
          f'{"yes" if min(ratios) >= 1 else "no"} (lowest {min(ratios):.2f})')
if multi:
    print(f'several nodes: > 1.1 everywhere: '
          f'{"yes" if min(multi) > 1.1 else "no"} (lowest {min(multi):.2f})')
if sched:
    g = math.exp(sum(map(math.log, sched)) / len(sched))
    print(f'in-network schedules (runtime model) / NCCL best: geomean '
          f'{g:.2f}; lowest {min(sched):.2f}'
          + (f'; several nodes: lowest {min(sched_multi):.2f}'
             if sched_multi else ''))
if plugins:
    g = math.exp(sum(map(math.log, plugins)) / len(plugins))
    print(f'what a CUDA plugin of synth --in-network runs / NCCL best '
          f'(its generated code at {plugin_gen} of {len(plugins)} rows, '
          f'NCCL at the others): geomean {g:.2f}; >= 1.0 everywhere: '
          f'{"yes" if min(plugins) >= 1 else "no"} '
          f'(lowest {min(plugins):.2f})'
          + (f'; several nodes: > 1.1 everywhere: '
             f'{"yes" if min(plugins_multi) > 1.1 else "no"} '
             f'(lowest {min(plugins_multi):.2f})' if plugins_multi else ''))
if gens:
    g = math.exp(sum(map(math.log, gens)) / len(gens))
    print(f'in-network generated code (step level) / NCCL best: geomean '
          f'{g:.2f} over {len(gens)} rows; lowest {min(gens):.2f}'
          + (f'; several nodes: lowest {min(gens_multi):.2f}'
             if gens_multi else '; several nodes: none lowers'))
if any(nosharp.values()):
    def summary(xs):
        if not xs:
            return '-'
        g = math.exp(sum(map(math.log, xs)) / len(xs))
        return f'geomean {g:.2f}, lowest {min(xs):.2f}, highest {max(xs):.2f}'
    print('several nodes whose network does not reduce (NCCL: ring or '
          'NVLS-tree) / NCCL best: in-network schedules '
          f'{summary(nosharp["sched"])}; generated code '
          f'{summary(nosharp["gen"])}; plugin {summary(nosharp["plugin"])}')
PY
