#!/usr/bin/env python3
"""reader_cost.py [-b BUILD] [-m 1,10,50]: what a hostile input costs to read.

For each shape that used to cost more than linear time in its size, makes
inputs of about 1, 10 and 50 MB, runs the command that reads it and prints
the wall time, the time per MB, and the ratio of the per-MB time to that of
the 1 MB input in the same run (about 1 for a linear reader, growing with
the size for a quadratic one). Every command must exit as expected (an
error for the broken shapes).

  schedule-count   a ring AllGather schedule with "count": 2147483647 on
                   every transfer (verify: out of range, exit 3)
  topology-keys    a topology with unknown keys (topo show: exit 1)
  schedule-keys    a schedule with unknown keys (verify: exit 1)
  sketch-keys      a sketch with unknown keys (synth: exit 1)
  sketch-symmetry  a sketch with the same symmetry_offsets entry repeated,
                   refused after them by input_chunkup 0 (synth: exit 1)
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
args = ap.parse_args()
cc = os.path.abspath(os.path.join(args.build, "tools/ccsynth/ccsynth"))
if not os.access(cc, os.X_OK):
    sys.exit("build ccsynth first (%s)" % cc)
sizes = [int(x) for x in args.megabytes.split(",")]
work = tempfile.mkdtemp(prefix="reader-cost-")
os.chdir(work)


def sh(*a):
    subprocess.run([cc, *a], check=True, capture_output=True)


sh("topo", "show", "ring:4", "--json", "-o", "t.json")
topo = json.load(open("t.json"))
sketch = {"nnodes": 2, "intranode_sketch": {"strategy": "none"},
          "internode_sketch": {"strategy": "relay",
                               "internode_conn": "fully-connected"},
          "symmetry_offsets": [[2, 4], [4, 8], [8, 16]],
          "hyperparameters": {"input_chunkup": 1}}


def with_keys(obj, mb):
    head = ",".join(json.dumps(k) + ":" + json.dumps(v) for k, v in obj.items())
    per = len('"zz_unknown_1000000":1,')
    keys = ",".join('"zz_unknown_%d":1' % i for i in range(mb * 2**20 // per))
    return "{" + head + "," + keys + "}"


def ring_schedule(mb):
    # A ring AllGather on ring:N holds N(N-1) transfers; their size per
    # transfer is measured on ring:64.
    sh("baseline", "ring", "-c", "allgather", "-t", "ring:64", "-o", "s.json")
    per = os.path.getsize("s.json") / (64 * 63)
    n = max(8, int((mb * 2**20 / per) ** 0.5))
    sh("baseline", "ring", "-c", "allgather", "-t", "ring:%d" % n,
       "-o", "s.json")
    return open("s.json").read()


def make(shape, mb):
    if shape == "schedule-count":
        text = ring_schedule(mb)
        return re.sub(r'(\{"step":[^{}]*)\}', r'\1,"count":2147483647}', text)
    if shape == "topology-keys":
        return with_keys(topo, mb)
    if shape == "schedule-keys":
        sh("baseline", "ring", "-c", "allreduce", "-t", "ring:4", "-o", "r.json")
        return with_keys(json.load(open("r.json")), mb)
    if shape == "sketch-keys":
        return with_keys(sketch, mb)
    # Read whole, then refused by the field after it (input_chunkup 0), so
    # that the time is the reader's and not the search's.
    entry = len("[2, 4], ")
    return json.dumps(dict(sketch, symmetry_offsets=[[2, 4]] *
                           (mb * 2**20 // entry),
                           hyperparameters={"input_chunkup": 0}))


commands = {
    "schedule-count": (3, ["verify", "in.json"]),
    "topology-keys": (1, ["topo", "show", "in.json"]),
    "schedule-keys": (1, ["verify", "in.json"]),
    "sketch-keys": (1, ["synth", "-t", "ndv2x2", "-k", "in.json", "-c",
                        "allgather", "--time-limit", "60", "-q", "-o",
                        "out.json"]),
    "sketch-symmetry": (1, ["synth", "-t", "ndv2x2", "-k", "in.json", "-c",
                            "allgather", "--time-limit", "60", "-q", "-o",
                            "out.json"]),
}
print("%-16s %8s %9s %9s %12s" % ("shape", "MB", "seconds", "s/MB",
                                   "x 1st s/MB"))
for shape, (rc, cmd) in commands.items():
    first = None
    for mb in sizes:
        text = make(shape, mb)
        open("in.json", "w").write(text)
        real_mb = len(text) / 2**20
        t0 = time.monotonic()
        p = subprocess.run([cc, *cmd], capture_output=True, text=True)
        dt = time.monotonic() - t0
        if p.returncode != rc:
            sys.exit("%s at %d MB: exit %d, expected %d\n%s" %
                     (shape, mb, p.returncode, rc, p.stderr[:400]))
        per = dt / real_mb
        first = first or per
        print("%-16s %8.1f %9.2f %9.3f %12.2f" % (shape, real_mb, dt, per,
                                                 per / first), flush=True)
subprocess.run(["rm", "-rf", work])
