#!/usr/bin/env python3
"""costly-inputs.py CCSYNTH WORKDIR

Inputs whose cost used to grow with their values or quadratically with
their size: each must end with the expected exit code and message. The
guard (120 s per command) is far above what a linear reader needs on a
loaded machine (well under a second each) and far below what the
quadratic ones took (40 s to over 100 s): it catches a regression without
timing anything.
  - every transfer of a schedule with "count": 2147483647 (verify);
  - 40,000 unknown keys in a topology, a schedule and a sketch;
  - 100,000 repeated entries of symmetry_offsets in a sketch (synth with a
    20 s limit must write a schedule: reading them takes well under a
    second alone, and several seconds in the sanitizer build on a machine
    running other builds, where a 5 s limit once ran out before the
    search began);
  - a sketch over 1 MiB (refused before it is read) and an invalid
    symmetry_offsets entry after 100,000 valid ones (named, within a 5 s
    limit);
  - a .ccl expression chain of 200,000 '+ 0' (refused at the 257th, before
    the bad byte at the end of the file is read);
  - a .ccl program that looks up its first parameter 2 million times after
    declaring 200,000 more (a lookup that scanned every name in scope took
    hours; half a second now).
"""
import json
import os
import re
import subprocess
import sys

cc, work = os.path.abspath(sys.argv[1]), sys.argv[2]
os.makedirs(work, exist_ok=True)
os.chdir(work)


def run(expect_rc, pattern, *args):
    try:
        p = subprocess.run([cc, *args], capture_output=True, text=True,
                           timeout=120)
    except subprocess.TimeoutExpired:
        sys.exit("FAIL: %s did not finish within 120 s" % " ".join(args))
    out = p.stdout + p.stderr
    print("%s -> exit %d\n%s" % (" ".join(args), p.returncode, out[:600]))
    if p.returncode != expect_rc:
        sys.exit("FAIL: exit %d, expected %d" % (p.returncode, expect_rc))
    if not re.search(pattern, out):
        sys.exit("FAIL: output does not match %r" % pattern)
    if len(max(out.splitlines() or [""], key=len)) > 1000:
        sys.exit("FAIL: a line of the message is over 1,000 characters")


run(0, "verified", "baseline", "ring", "-c", "allreduce", "-t", "ring:4",
    "-o", "r.json")
run(0, "", "topo", "show", "ring:4", "--json", "-o", "t.json")

# A count far beyond the buffers: an out-of-range error, not a loop over it.
text = open("r.json").read()
open("count.json", "w").write(
    re.sub(r'(\{"step":[^{}]*)\}', r'\1,"count":2147483647}', text))
run(3, r"source chunks 0\.\.2147483646 of input on rank 1 are outside its 8 "
    r"chunks", "verify", "count.json")

# 40,000 unknown keys: the first one in the file is named, at its column.
def unknown_keys(obj):
    items = [json.dumps(k) + ":" + json.dumps(v) for k, v in obj.items()]
    items += ['"zz_unknown_%d":1' % i for i in range(40000)]
    return "{" + ",".join(items) + "}"


open("t-keys.json", "w").write(unknown_keys(json.load(open("t.json"))))
run(1, r"t-keys.json:1:\d+: error: unknown field 'zz_unknown_0'",
    "topo", "show", "t-keys.json")
sched = json.loads(text)
open("r-keys.json", "w").write(unknown_keys(sched))
run(1, r"r-keys.json:1:\d+: error: unknown field 'zz_unknown_0'",
    "verify", "r-keys.json")
sketch = {"nnodes": 2, "intranode_sketch": {"strategy": "none"},
          "internode_sketch": {"strategy": "relay",
                               "internode_conn": "fully-connected"},
          "symmetry_offsets": [[2, 4], [4, 8], [8, 16]],
          "hyperparameters": {"input_chunkup": 1}}
open("k-keys.json", "w").write(unknown_keys(sketch))
run(1, r"k-keys.json:1:\d+: error: unknown field 'zz_unknown_0'",
    "synth", "-t", "ndv2x2", "-k", "k-keys.json", "-c", "allgather",
    "--time-limit", "5", "-q", "-o", "k-keys-out.json")
if os.path.exists("k-keys-out.json"):
    sys.exit("FAIL: a schedule was written for a refused sketch")

# 100,000 entries of symmetry_offsets (the same symmetry again and again).
many = dict(sketch, symmetry_offsets=[[2, 4]] * 100000)
open("k-sym.json", "w").write(json.dumps(many))
run(0, r"wrote .*k-sym-out.json", "synth", "-t", "ndv2x2", "-k",
    "k-sym.json", "-c", "allgather", "--time-limit", "20", "-o",
    "k-sym-out.json")

# A sketch larger than any real one is refused unread.
open("k-big.json", "w").write(json.dumps(
    dict(sketch, symmetry_offsets=[[2, 4]] * 140000)))
run(1, r"cannot read 'k-big.json': larger than the 1 MiB a sketch may have",
    "synth", "-t", "ndv2x2", "-k", "k-big.json", "-c", "allgather",
    "--time-limit", "5", "-q", "-o", "k-big-out.json")
# The entry that is no symmetry of the machine is named, not the time.
bad = dict(sketch, symmetry_offsets=[[2, 4]] * 100000 + [[1, 3]])
open("k-bad.json", "w").write(json.dumps(bad))
run(1, r"k-bad.json:1:\d+: error: symmetry_offsets entry \[1, 3\]: the group "
    r"size must divide the 16 ranks", "synth", "-t", "ndv2x2", "-k",
    "k-bad.json", "-c", "allgather", "--time-limit", "5", "-q", "-o",
    "k-bad-out.json")

# An expression too deep is refused as soon as it is, not after the file.
open("chain.ccl", "w").write(
    "param ranks = 4;\ncollective allgather(ranks = ranks);\n"
    "let c = 1" + " + 0" * 200000 + ";\n@\n")
run(1, r"chain.ccl:3:\d+: error: expression is too deeply nested",
    "verify", "chain.ccl")

# Names are found by hash whatever the number in scope.
open("lookups.ccl", "w").write(
    "param ranks = 4;\n" +
    "".join("param z%d = 1;\n" % i for i in range(200000)) +
    "collective allgather(ranks = ranks);\n"
    "for r in 0..ranks {\n  copy(chunk(r, input, 0) -> chunk(r, output, r));\n}\n"
    "for s in 0..ranks - 1 {\n  for r in 0..ranks {\n"
    "    let c = mod(r - s, ranks);\n"
    "    copy(chunk(r, output, c) -> chunk((r + 1) % ranks, output, c));\n"
    "  }\n}\n"
    "for i in 0..1000000 {\n  let x = ranks + ranks;\n}\n")
run(0, r"lookups.ccl: OK: allgather\(ranks=4, chunks=1\)", "verify",
    "lookups.ccl")
print("ok")
