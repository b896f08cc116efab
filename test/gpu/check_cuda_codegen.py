#!/usr/bin/env python3
"""Compiles a generated algorithm for the CUDA backend and checks its kernels.

Runs without a GPU. Steps: `ccsynth baseline KIND` (or a given schedule),
`ccsynth compile --target cuda`, then one nvcc run with -DCCSYNTH_PLUGIN for
every requested architecture (host code, PTX and ptxas -v together; the
transports of CCSYNTH_CUDA_TRANSPORTS instantiated), and asserts on the result:

  * the PTX has no indirect branch (`brx.idx`) and no call through a
    register (`call ... %r...`);
  * ptxas reports 0 bytes stack frame and 0 bytes spill stores/loads for
    every function (kernels are fully inlined).

With --allow-nccl-stack N, kernels of the NCCL transport may have a stack
frame of up to N bytes (builds with CCSYNTH_NCCL_GIN: NCCL's own GIN put
builds its descriptor in local memory); everything else stays strict.

Prints one line per kernel: arch, transport, element type, registers,
stack, spills; and the compile time of each architecture.
"""
import argparse
import os
import re
import subprocess
import sys
import time


def run(cmd, **kw):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kw)
    if proc.returncode != 0:
        sys.stderr.write("command failed (%d): %s\n%s\n" %
                         (proc.returncode, " ".join(cmd), proc.stdout[-20000:]))
        sys.exit(1)
    return proc.stdout


# ptxas -v: "Compiling entry function 'NAME' for 'sm_90'" then
# "Function properties for NAME" / "N bytes stack frame, S bytes spill
# stores, L bytes spill loads" / "Used R registers".
PROPS = re.compile(r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, "
                   r"(\d+) bytes spill stores, (\d+) bytes spill loads", re.M)
REGS = re.compile(r"Function properties for (\S+)\s*\n[^\n]*\nptxas info\s*: Used (\d+) registers",
                  re.M)
INDIRECT_CALL = re.compile(r"^\s*(@%p\d+\s+)?call(\.uni)?\s+(\([^)]*\),\s*)?%", re.M)


def describe(name):
    """Transport and element type from a mangled kernel name."""
    transport = "nccl" if "NcclTransport" in name else (
        "virtual" if "VirtualTransport" in name else (
            "ipc" if "IpcTransport" in name else "?"))
    elem = "?"
    for key, label in (("AnyWord", "any"), ("6__half", "f16"),
                       ("13__nv_bfloat16", "bf16"), ("EfNS0", "f32"),
                       ("EdNS0", "f64"), ("EaNS0", "i8"), ("EhNS0", "u8"),
                       ("EiNS0", "i32"), ("EjNS0", "u32"), ("ElNS0", "i64"),
                       ("EmNS0", "u64")):
        if key in name:
            elem = label
            break
    op = "-"
    for key, label in (("DevSum", "sum"), ("DevProd", "prod"),
                       ("DevMax", "max"), ("DevMin", "min")):
        if key in name:
            op = label
    return transport, elem, op


def check_ptx(text, what):
    errors = []
    n = text.count("brx.idx")
    if n:
        errors.append("%s: %d indirect branches (brx.idx)" % (what, n))
    calls = INDIRECT_CALL.findall(text)
    if calls:
        errors.append("%s: %d indirect calls" % (what, len(calls)))
    if ".entry" not in text:
        errors.append("%s: no kernel in the PTX" % what)
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ccsynth", required=True)
    ap.add_argument("--nvcc", required=True)
    ap.add_argument("--include", required=True, action="append",
                    help="a runtime include folder (runtime/include, "
                    "runtime/cuda/include; repeatable)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--baseline", nargs=3, metavar=("KIND", "COLLECTIVE", "TOPO"))
    ap.add_argument("--schedule", help="a schedule JSON instead of a baseline")
    ap.add_argument("--arch", action="append", default=[],
                    help="e.g. 80, 90 (repeatable)")
    ap.add_argument("--define", action="append", default=[],
                    help="extra -D for nvcc (repeatable)")
    ap.add_argument("--compile-arg", action="append", default=[],
                    help="an extra argument for `ccsynth compile`, e.g. "
                    "--cuda-loads=4 (repeatable)")
    ap.add_argument("--allow-nccl-stack", type=int, default=0)
    ap.add_argument("--expect-kernels", type=int, default=0,
                    help="kernels expected per architecture (0: any > 0)")
    ap.add_argument("--expect-ptx", action="append", default=[],
                    help="an instruction every architecture's PTX must "
                    "hold, e.g. multimem.st (repeatable)")
    ap.add_argument("--extra-tile", type=int, default=0,
                    help="also define a descriptor of the same code with "
                    "this tile (bytes), as the tuned compile writes for a "
                    "size range: it must compile no kernel of its own")
    args = ap.parse_args()

    os.makedirs(args.workdir, exist_ok=True)
    sched = args.schedule
    if not sched:
        sched = os.path.join(args.workdir, args.name + ".json")
        kind, coll, topo = args.baseline
        run([args.ccsynth, "baseline", kind, "-c", coll, "-t", topo, "-o", sched])
    cu = os.path.join(args.workdir, args.name + ".cu")
    # One instance, as lowered without tuning: the rules are of the code's
    # shape, which more instances only repeat, and the tuned program's
    # larger code would multiply nvcc's time in CI.
    run([args.ccsynth, "compile", sched, "--target", "cuda", "--no-tune",
         "-o", cu] + args.compile_arg)
    with open(cu) as f:
        header = [next(f) for _ in range(4)]
    print("".join(header).rstrip())
    if args.extra_tile:
        with open(cu) as f:
            ns = re.search(r"^namespace (ccsynth_gen_\w+) \{$", f.read(),
                           re.M).group(1)
        with open(cu, "a") as f:
            f.write("#if defined(CCSYNTH_PLUGIN)\n"
                    "CCSYNTH_DEFINE_ALGORITHM_TILED(%s::Algo, %s_extra_tile, "
                    "0ull, 0ull, %dull)\n#endif\n" %
                    (ns, ns[len("ccsynth_gen_"):], args.extra_tile))

    errors = []
    for arch in args.arch:
        keep = os.path.join(args.workdir, "%s.sm_%s" % (args.name, arch))
        os.makedirs(keep, exist_ok=True)
        obj = os.path.join(keep, args.name + ".o")
        cmd = [args.nvcc, "-std=c++20", "-O3", "-x", "cu", "-c", cu, "-o", obj,
               "-gencode", "arch=compute_%s,code=sm_%s" % (arch, arch),
               "-DCCSYNTH_PLUGIN"] + ["-I" + d for d in args.include] + [
               "-Xptxas", "-v",
               "-keep", "-keep-dir", keep, "-Xcompiler", "-fPIC"]
        cmd += ["-D" + d for d in args.define]
        start = time.monotonic()
        log = run(cmd)
        seconds = time.monotonic() - start
        ptx = [os.path.join(keep, p) for p in os.listdir(keep) if p.endswith(".ptx")]
        if len(ptx) != 1:
            errors.append("sm_%s: expected one PTX file, found %s" % (arch, ptx))
            continue
        with open(ptx[0]) as f:
            text = f.read()
        errors += check_ptx(text, "sm_%s PTX" % arch)
        for want in args.expect_ptx:
            found = len(re.findall(r"^\s*" + re.escape(want), text, re.M))
            print("sm_%s: %d x %s" % (arch, found, want))
            if not found:
                errors.append("sm_%s PTX has no %s" % (arch, want))
        regs = dict(REGS.findall(log))
        props = PROPS.findall(log)
        if not props:
            errors.append("sm_%s: ptxas -v printed no function properties" % arch)
        kernels = [p for p in props if "ccsynthKernel" in p[0]]
        if not kernels:
            errors.append("sm_%s: no ccsynth kernel was compiled" % arch)
        if args.expect_kernels and len(kernels) != args.expect_kernels:
            errors.append("sm_%s: %d kernels, expected %d" %
                          (arch, len(kernels), args.expect_kernels))
        for name, stack, st, ld in props:
            transport, elem, op = describe(name)
            if "ccsynthKernel" not in name:
                transport = "(func)"
                elem = name.split("rt")[1][:24] if "rt" in name else name[:24]
            stack, st, ld = int(stack), int(st), int(ld)
            allowed = args.allow_nccl_stack if transport == "nccl" else 0
            ok = stack <= allowed and st == 0 and ld == 0
            print("sm_%s %-7s %-4s %-4s regs %3s stack %3d spill %d/%d %s" %
                  (arch, transport, elem, op, regs.get(name, "?"), stack, st, ld,
                   "ok" if ok else "FAIL"))
            if not ok:
                errors.append("sm_%s %s: %d bytes stack frame (allowed %d), "
                              "%d/%d bytes spilled" % (arch, name, stack, allowed,
                                                       st, ld))
        print("sm_%s: %d kernels (%d functions), %d PTX lines, %d direct "
              "calls, compiled in %.1f s" %
              (arch, len(kernels), len(props), text.count("\n"),
               len(re.findall(r"^\s*call", text, re.M)), seconds))
    if not args.arch:
        errors.append("no --arch given")
    for e in errors:
        print("error: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
