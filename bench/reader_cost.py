#!/usr/bin/env python3
"""reader_cost.py [-b BUILD] [-m 1,10,50] [-s SHAPE,...]: what an input costs
to read, in time and memory.

For every reader (schedule JSON, topology JSON, sketch, .ccl program, MSCCL
XML, NCCL topology XML, ccl dialect MLIR) and the shapes that once cost
more than linear time or a large multiple of their size in memory, makes
inputs of about 1, 10 and 50 MB, runs the command that reads it and prints
the wall time, the time per MB, that figure against the 1 MB one in the
same run (about 1 for a linear reader), and the memory per input byte: the
peak resident memory of the command less that of the same command on a
16 KB input of the same shape, divided by the difference in input size.
Every command must exit as expected (an error for the broken shapes), and
every input of 5 MB or more must cost at most --limit bytes of memory per
input byte (11 by default: the goal is about 10); the script exits 1
naming those that do not.

  schedule-count   a ring AllGather schedule with "count": 2147483647 on
                   every transfer (verify: out of range, exit 3)
  schedule-ring    a ring AllGather schedule (verify: exit 0)
  topology-keys    a topology with unknown keys (topo show: exit 1)
  schedule-keys    a schedule with unknown keys (verify: exit 1)
  sketch-keys      a sketch with unknown keys (synth: exit 1; a sketch is
                   at most 1 MiB, so the larger ones are refused unread)
  sketch-symmetry  a sketch with the same symmetry_offsets entry repeated,
                   refused after them by input_chunkup 0 (synth: exit 1)
  dsl-chain        a .ccl program whose expression is a chain of '+ 0'
                   (verify: too deeply nested, exit 1)
  dsl-params       a .ccl ring AllGather after that many 'param zN = 1;'
                   (verify: exit 0)
  msccl-xml        an MSCCL XML ring AllGather (verify: exit 0)
  nccl-topology    an NCCL topology dump whose first GPU holds that many
                   elements ccsynth does not use (topo show: exit 0, or
                   1 past 65,536 elements, refused as they are read)
  mlir             a ccl dialect ring AllGather (compile --target mlir:
                   exit 0)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("-b", "--build", default="build")
ap.add_argument("-m", "--megabytes", default="1,10,50")
ap.add_argument("-s", "--shapes", default="",
                help="comma list of shapes (default: all)")
ap.add_argument("--limit", type=float, default=11.0,
                help="exit 1 when an input of 5 MB or more costs more bytes "
                     "of memory per input byte than this (default 11: the "
                     "goal is about 10)")
args = ap.parse_args()
cc = os.path.abspath(os.path.join(args.build, "tools/ccsynth/ccsynth"))
if not os.access(cc, os.X_OK):
    sys.exit("build ccsynth first (%s)" % cc)
here = os.path.dirname(os.path.abspath(__file__))
dgx1_dump = os.path.join(here, "..", "test", "unit", "core", "inputs",
                         "nccl-dgx1.xml")
sizes = [float(x) for x in args.megabytes.split(",")]
work = tempfile.mkdtemp(prefix="reader-cost-")
os.chdir(work)
BASE = 16 * 1024  # bytes of the baseline input of each shape


def sh(*a):
    subprocess.run([cc, *a], check=True, capture_output=True)


sh("topo", "show", "ring:4", "--json", "-o", "t.json")
topo = json.load(open("t.json"))
sketch = {"nnodes": 2, "intranode_sketch": {"strategy": "none"},
          "internode_sketch": {"strategy": "relay",
                               "internode_conn": "fully-connected"},
          "symmetry_offsets": [[2, 4], [4, 8], [8, 16]],
          "hyperparameters": {"input_chunkup": 1}}
RING_CCL = """param ranks = 4;
collective allgather(ranks = ranks);
for r in 0..ranks {
  copy(chunk(r, input, 0) -> chunk(r, output, r));
}
for s in 0..ranks - 1 {
  for r in 0..ranks {
    let c = mod(r - s, ranks);
    copy(chunk(r, output, c) -> chunk((r + 1) % ranks, output, c));
  }
}
"""


def with_keys(obj, nbytes):
    head = ",".join(json.dumps(k) + ":" + json.dumps(v) for k, v in obj.items())
    per = len('"zz_unknown_1000000":1,')
    keys = ",".join('"zz_unknown_%d":1' % i for i in range(nbytes // per))
    return "{" + head + "," + keys + "}"


def ring_schedule(nbytes):
    # A ring AllGather on ring:N holds N(N-1) transfers; their size per
    # transfer is measured on ring:64.
    sh("baseline", "ring", "-c", "allgather", "-t", "ring:64", "-o", "s.json")
    per = os.path.getsize("s.json") / (64 * 63)
    n = max(4, int((nbytes / per) ** 0.5))
    sh("baseline", "ring", "-c", "allgather", "-t", "ring:%d" % n,
       "-o", "s.json")
    return open("s.json").read()


def ring_ranks(nbytes, per_transfer):
    return max(4, int((nbytes / per_transfer) ** 0.5))


def msccl_ring(nbytes):
    """An MSCCL ring AllGather on k channels (a threadblock holds at most 64
    steps): the threadblock of channel h on a rank sends its own chunk
    when the rank is h modulo k and forwards the chunks from ranks h
    modulo k; one more copies the rank's own chunk."""
    n = ring_ranks(nbytes, 112)
    k = (n + 59) // 60
    step = ('<step s="%d" type="%s" srcbuf="%s" srcoff="%d" dstbuf="o" '
            'dstoff="%d" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n')
    out = ['<algo name="ring" proto="Simple" nchannels="%d" '
           'nchunksperloop="%d" ngpus="%d" coll="allgather" inplace="0" '
           'outofplace="1" minBytes="0" maxBytes="0">\n' % (k, n, n)]
    for r in range(n):
        out.append('<gpu id="%d" i_chunks="1" o_chunks="%d" s_chunks="0">\n'
                   % (r, n))
        for h in range(k):
            out.append('<tb id="%d" send="%d" recv="%d" chan="%d">\n'
                       % (h, (r + 1) % n, (r - 1) % n, h))
            i = 0
            if r % k == h:
                out.append(step % (i, "s", "i", 0, -1))
                i += 1
            for s in range(1, n):
                c = (r - s) % n
                if c % k != h:
                    continue
                last = s == n - 1
                out.append(step % (i, "r" if last else "rcs",
                                   "i" if last else "o", -1 if last else c, c))
                i += 1
            out.append('</tb>\n')
        out.append('<tb id="%d" send="-1" recv="-1" chan="0">\n' % k)
        out.append(step % (0, "cpy", "i", 0, r))
        out.append('</tb>\n</gpu>\n')
    out.append('</algo>\n')
    return "".join(out)


def nccl_topology(nbytes):
    text = open(dgx1_dump).read()
    line = '<c2c bw="1" count="1" id="7"/>\n'
    extra = line * max(1, nbytes // len(line))
    return text.replace('<gpu dev="0" sm="70" rank="0" gdr="1">\n',
                        '<gpu dev="0" sm="70" rank="0" gdr="1">\n' + extra, 1)


def mlir_ring(nbytes):
    def compiled(n):
        sh("baseline", "ring", "-c", "allgather", "-t", "ring:%d" % n,
           "-o", "m.json")
        sh("compile", "m.json", "--target", "mlir", "--instances", "1",
           "--protocol", "Simple", "-o", "m.mlir")
        return open("m.mlir").read()
    # The size per transfer is measured on ring:32.
    per = len(compiled(32)) / (32 * 31)
    return compiled(ring_ranks(nbytes, per))


def make(shape, nbytes):
    if shape == "schedule-count":
        text = ring_schedule(nbytes)
        return re.sub(r'(\{"step":[^{}]*)\}', r'\1,"count":2147483647}', text)
    if shape == "schedule-ring":
        return ring_schedule(nbytes)
    if shape == "topology-keys":
        return with_keys(topo, nbytes)
    if shape == "schedule-keys":
        sh("baseline", "ring", "-c", "allreduce", "-t", "ring:4", "-o", "r.json")
        return with_keys(json.load(open("r.json")), nbytes)
    if shape == "sketch-keys":
        return with_keys(sketch, nbytes)
    if shape == "sketch-symmetry":
        # Read whole, then refused by the field after it (input_chunkup 0),
        # so that the cost is the reader's and not the search's.
        entry = len("[2, 4], ")
        return json.dumps(dict(sketch, symmetry_offsets=[[2, 4]] *
                               (nbytes // entry),
                               hyperparameters={"input_chunkup": 0}))
    if shape == "dsl-chain":
        return ("param ranks = 4;\ncollective allgather(ranks = ranks);\n"
                "for r in 0..ranks {\n"
                "  let c = mod(r - 1" + " + 0" * (nbytes // 4) +
                ", ranks);\n}\n")
    if shape == "dsl-params":
        per = len("param z1000000 = 1;\n")
        return "".join("param z%d = 1;\n" % i
                       for i in range(nbytes // per)) + RING_CCL
    if shape == "msccl-xml":
        return msccl_ring(nbytes)
    if shape == "nccl-topology":
        return nccl_topology(nbytes)
    if shape == "mlir":
        return mlir_ring(nbytes)
    raise SystemExit("unknown shape " + shape)


sketch_cmd = ["synth", "-t", "ndv2x2", "-k", "in.json", "-c", "allgather",
              "--time-limit", "60", "-q", "-o", "out.json"]
# shape: (input file, expected exit, command)
commands = {
    "schedule-count": ("in.json", 3, ["verify", "in.json"]),
    "schedule-ring": ("in.json", 0, ["verify", "in.json"]),
    "topology-keys": ("in.json", 1, ["topo", "show", "in.json"]),
    "schedule-keys": ("in.json", 1, ["verify", "in.json"]),
    "sketch-keys": ("in.json", 1, sketch_cmd),
    "sketch-symmetry": ("in.json", 1, sketch_cmd),
    "dsl-chain": ("in.ccl", 1, ["verify", "in.ccl"]),
    "dsl-params": ("in.ccl", 0, ["verify", "in.ccl"]),
    "msccl-xml": ("in.xml", 0, ["verify", "in.xml"]),
    "nccl-topology": ("in.xml", 0, ["topo", "show", "in.xml"]),
    "mlir": ("in.mlir", 0, ["compile", "in.mlir", "--target", "mlir",
                            "-o", "out.mlir"]),
}
chosen = [s for s in args.shapes.split(",") if s] or list(commands)


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
if not TIME:
    print("note: without /usr/bin/time the peak memory is the child's as "
          "getrusage reports it, which counts this script's own memory at "
          "the fork", file=sys.stderr)


def expected_exit(shape, nbytes):
    if shape == "nccl-topology":
        # Past 65,536 elements a dump is refused as it is read.
        return 0 if nbytes < 65536 * len('<c2c bw="1" count="1" id="7"/>\n') \
            else 1
    return commands[shape][1]


def run(shape, nbytes):
    """(input bytes, seconds, peak resident KB) of reading the shape."""
    path, _, cmd = commands[shape]
    text = make(shape, nbytes)
    open(path, "w").write(text)
    size = len(text)
    del text
    rc = expected_exit(shape, size)
    argv = [cc, *cmd]
    if TIME:
        argv = [TIME, "-f", "%M", "-o", "rss.txt", *argv]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    dt = time.monotonic() - t0
    if code != rc:
        sys.exit("%s at %d bytes: exit %d, expected %d\n%s" %
                 (shape, size, code, rc, err[:400]))
    kb = usage.ru_maxrss
    if TIME:
        kb = int(open("rss.txt").read().split()[-1])
    return size, dt, kb


print("%-16s %8s %9s %9s %12s %9s %12s" % (
    "shape", "MB", "seconds", "s/MB", "x 1st s/MB", "peak MB",
    "bytes/byte"))
worst = 0.0
over = []
for shape in chosen:
    base_bytes, _, base_kb = run(shape, BASE)
    first = None
    for mb in sizes:
        nbytes, dt, kb = run(shape, int(mb * 2**20))
        real_mb = nbytes / 2**20
        per = dt / real_mb
        first = first or per
        ratio = max(0.0, (kb - base_kb) * 1024.0 / (nbytes - base_bytes))
        worst = max(worst, ratio)
        if real_mb >= 5 and ratio > args.limit:
            over.append("%s at %.0f MB: %.1f" % (shape, real_mb, ratio))
        print("%-16s %8.1f %9.2f %9.3f %12.2f %9.0f %12.1f" % (
            shape, real_mb, dt, per, per / first, kb / 1024.0, ratio),
            flush=True)
print("most memory per input byte: %.1f" % worst)
subprocess.run(["rm", "-rf", work])
if over:
    sys.exit("over %.1f bytes per input byte: %s" % (args.limit,
                                                     "; ".join(over)))
