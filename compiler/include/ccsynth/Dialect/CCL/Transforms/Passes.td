//===- Passes.td - Passes over the ccl dialect ----------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every pass runs on the module and acts on the ops of its level: chunk
// passes on ccl.algorithm, step passes on ccl.program (and skip the rest),
// so one pipeline compiles an algorithm or re-checks a hand-written
// program. The default pipeline (see Passes.h, buildDefaultPipeline) is
//   ccl-verify-collective, [ccl-instances], [ccl-pipeline-chunks,
//   ccl-verify-collective], [ccl-coalesce-transfers], ccl-lower-to-steps,
//   ccl-fuse-steps, ccl-assign-threadblocks, ccl-check-deadlock.
//
//===----------------------------------------------------------------------===//
#ifndef CCSYNTH_DIALECT_CCL_TRANSFORMS_PASSES_TD
#define CCSYNTH_DIALECT_CCL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def VerifyCollectivePass : Pass<"ccl-verify-collective", "mlir::ModuleOp"> {
  let summary = "Prove that every ccl.algorithm implements its collective";
  let description = [{
    Converts each `ccl.algorithm` back into a core-model Schedule and runs
    the symbolic verifier on it (the same proof `ccsynth verify` gives):
    every output chunk must end with exactly the required contributions,
    each reduction counted once, no read before the data arrives and no
    two writes of one slot in one step. Each issue is reported at the
    offending `ccl.transfer` (or at the algorithm for end-state issues) and
    the pass fails. The IR is not changed.

    ```mlir
    // error: [wrong-output] rank 1 output chunk 0 holds {} but needs {in[0][0]}
    ccl.algorithm @bad attributes {collective = "allgather", ranks = 2, ...} {
      ccl.transfer copy 1:i[0] -> 0:o[1] step 0
    }
    ```
  }];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
  let options = [
    Option<"maxIssues", "max-issues", "int", /*default=*/"8",
           "Stop after this many issues per algorithm">,
    Option<"checkLinks", "check-links", "bool", /*default=*/"false",
           "Also require every transfer to use an existing link of the "
           "topology the algorithm names (its `topology` attribute: a "
           "built-in name or a file), as `ccsynth verify` does">,
  ];
}

def InstancesPass : Pass<"ccl-instances", "mlir::ModuleOp"> {
  let summary = "Replicate an algorithm across channels (MSCCL instances)";
  let description = [{
    Splits every chunk into `count` sub-chunks and replaces each transfer
    of chunks [x, x+n) by `count` transfers of the same step that together
    move the refined range [x*count, (x+n)*count), instance k moving the
    k-th contiguous piece of n sub-chunks. Instance k is hinted onto
    channel `base*count + k` so that the instances run on separate
    channels and threadblocks. The collective's chunk factor, both buffer
    sizes and the scratch size are multiplied by `count`; the result
    implements the same collective on finer chunks.

    ```mlir
    // count=2:  ccl.transfer copy 0:i[0] -> 1:o[0] step 0
    // becomes   ccl.transfer copy 0:i[0] -> 1:o[0] step 0 {channel = 0}
    //           ccl.transfer copy 0:i[1] -> 1:o[1] step 0 {channel = 1}
    ```
  }];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
  let options = [
    Option<"count", "count", "int", /*default=*/"1",
           "Number of instances (>= 1)">,
  ];
}

def SplitPhasesPass : Pass<"ccl-split-phases", "mlir::ModuleOp"> {
  let summary = "Put a reduction's two phases on separate channels";
  let description = [{
    For an algorithm whose collective reduces (AllReduce): run in schedule
    order, a transfer whose source already holds a finished value (as many
    contributions as the largest set an output chunk needs) spreads it;
    every other transfer still reduces. Spreading transfers get channel
    hint `2*base + 1`, the others `2*base` (`base`: the transfer's hint, 0
    when it has none); run before ccl-instances, which multiplies the
    hints. A threadblock runs its steps in order and every loop iteration
    after the previous one, so a connection used by both phases ties the
    next iteration's reduction to the current one's spreading; on separate
    channels the reduction runs ahead. Algorithms whose transfers between
    ranks are all of one phase, and collectives without reduction, are
    left alone.

    ```mlir
    // AllReduce on 2 ranks, chunk 0 reduced on rank 1 and sent back:
    ccl.transfer copy 0:i[0] -> 1:s[0] step 0
    ccl.transfer reduce 1:s[0] -> 1:i[0] step 1
    ccl.transfer copy 1:i[0] -> 0:i[0] step 2
    // get hints {channel = 0}, {channel = 0} and {channel = 1}
    ```
  }];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
}

def PipelineChunksPass : Pass<"ccl-pipeline-chunks", "mlir::ModuleOp"> {
  let summary = "Split chunks into parts that flow through the steps in turn";
  let description = [{
    Splits every chunk into `parts` sub-chunks; part p of a transfer of
    step s moves at step s + p. Consecutive hops of a multi-hop route then
    overlap: while part 0 takes the second hop, part 1 takes the first.
    Multi-chunk transfers are split into single chunks because part p of a
    range is not contiguous. Data dependencies, write-once slots and
    reductions are preserved part by part, so the result implements the
    same collective (re-run ccl-verify-collective to check).

    ```mlir
    // parts=2:  ccl.transfer copy 0:i[0] -> 1:s[0] step 0
    //           ccl.transfer copy 1:s[0] -> 2:o[0] step 1
    // becomes   ccl.transfer copy 0:i[0] -> 1:s[0] step 0
    //           ccl.transfer copy 0:i[1] -> 1:s[1] step 1
    //           ccl.transfer copy 1:s[0] -> 2:o[0] step 1
    //           ccl.transfer copy 1:s[1] -> 2:o[1] step 2
    ```
  }];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
  let options = [
    Option<"parts", "parts", "int", /*default=*/"1",
           "Number of parts per chunk (>= 1)">,
  ];
}

def CoalesceTransfersPass : Pass<"ccl-coalesce-transfers", "mlir::ModuleOp"> {
  let summary = "Join transfers that move together into multi-chunk transfers";
  let description = [{
    Renames each rank's scratch chunks so that chunks which travel together
    are contiguous, then joins the transfers of one step between one pair
    of ranks whose source and destination ranges follow on from each other
    (same kind, buffers and hints) into one transfer of their total count.
    A scratch chunk gets its new index when it is first written; within a
    (step, source, destination) group chunks are ordered by their future
    (the ranks and steps of the transfers that forward them on), so a
    bundle that drops one chunk per hop stays contiguous. Ranks whose
    scratch already holds multi-chunk transfers keep their layout.
    Renaming permutes scratch and a joined transfer moves exactly its
    members' chunks in their step, so the collective is unchanged; the
    pass re-proves every algorithm it changes and leaves an algorithm in
    which nothing joins untouched.

    ```mlir
    // ccl.transfer copy 1:s[7] -> 2:s[3] step 1
    // ccl.transfer copy 1:s[2] -> 2:s[9] step 1
    // becomes (1:s[7], 1:s[2] now 1:s[0], 1:s[1]; 2:s[3], 2:s[9] now
    // 2:s[0], 2:s[1])
    // ccl.transfer copy 1:s[0] -> 2:s[0] count 2 step 1
    ```
  }];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
}

def LowerToStepsPass : Pass<"ccl-lower-to-steps", "mlir::ModuleOp"> {
  let summary = "Lower each ccl.algorithm to a ccl.program of per-rank steps";
  let description = [{
    Replaces every `ccl.algorithm` by a `ccl.program` with one `ccl.gpu`
    per rank. A transfer between two ranks becomes a `ccl.send` at the
    source and a `ccl.recv` (copy) or `ccl.recv_reduce_copy` (reduce, with
    source = destination) at the destination; a transfer within a rank
    becomes `ccl.copy` or `ccl.reduce`. Steps keep the transfer's schedule
    step and index as their `step`/`order` keys and are listed in that
    order. Transfers of more than `max-count` chunks are split so that
    every step stays below the runtime's count limit (MSCCL: cnt < 72).

    ```mlir
    // ccl.transfer copy 0:i[0] -> 1:o[0] step 0   becomes
    ccl.gpu 0 chunks(1, 2, 0) { ccl.send i[0] to 1 }
    ccl.gpu 1 chunks(1, 2, 0) { ccl.recv from 0 -> o[0] }
    ```
  }];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
  let options = [
    Option<"maxCount", "max-count", "int", /*default=*/"71",
           "Largest chunk count of one step">,
  ];
}

def FuseStepsPass : Pass<"ccl-fuse-steps", "mlir::ModuleOp"> {
  let summary = "Fuse receive/send pairs into rcs, rrc, rrs and rrcs steps";
  let description = [{
    Runs on programs whose steps are not yet in threadblocks. Per rank:
      * `recv X` then a later `send X` (X unchanged in between)
        becomes `recv_copy_send` (rcs);
      * `recv_reduce_copy X` then a later `send X` becomes
        `recv_reduce_copy_send` (rrcs), or `recv_reduce_send` (rrs) when X
        is a scratch or input range nobody reads afterwards;
      * `recv S` into scratch then a later `reduce S -> Y` (S dead
        afterwards, Y untouched in between) becomes
        `recv_reduce_copy ... with Y -> Y` (rrc);
      * `recv X` then a later `reduce S -> X` (nothing touches X and
        nothing writes S in between) becomes
        `recv_reduce_copy ... with S -> X` (rrc), which a later `send X`
        then joins into an rrcs.
    The fused step takes the receive's place, so the send moves earlier; a
    fusion is only made when no other message on the same (sender,
    receiver) connection lies between the old and the new position, which
    keeps sends and receives matched in order. Where other sends to that
    peer lie in between and the receive cannot move past them, those sends
    move ahead of the receive instead (`send-first`, on by default) when
    each is a plain send whose data nothing from the receive on writes: a
    ring hop that receives two chunks before it forwards the first then
    still fuses into one rrcs per chunk.

    ```mlir
    ccl.recv from 0 -> o[0] {step = 0}
    ccl.send o[0] to 2 {step = 1}
    // becomes
    ccl.recv_copy_send from 0 -> o[0] to 2 {step = 0}
    ```
  }];
  let options = [
    Option<"sendFirst", "send-first", "bool", /*default=*/"true",
           "Move plain sends ahead of a receive so that it can fuse with "
           "the send that forwards it">,
    Option<"forward", "forward", "bool", /*default=*/"true",
           "Fuse a receive with the send that forwards it (rcs, rrs, "
           "rrcs); without it only receive-and-reduce steps (rrc) are made, "
           "which tie no send peer to a receive peer">,
  ];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
}

def BalanceReductionsPass : Pass<"ccl-balance-reductions", "mlir::ModuleOp"> {
  let summary = "Turn chains of local reduces into one destination into trees";
  let description = [{
    Runs on programs whose steps are not yet in threadblocks. Per rank, a
    chain of at least three `reduce sJ -> D` (the same destination range D,
    nothing else touching D in between, every source a distinct scratch
    range that nothing else touches from its reduce to the chain's end and
    nothing reads afterwards before writing it) becomes a pairwise tree
    over [D, s1, .., sk]: level by level, element 2m+1 is reduced into
    element 2m. The same k reduces, ceil(log2(k+1)) deep instead of k; the
    reduces of a level write different ranges, so that
    `ccl-assign-threadblocks` with `local-tbs` runs them side by side. The
    tree takes the place of the chain's last reduce.

    ```mlir
    ccl.reduce s[0] -> o[0]
    ccl.reduce s[1] -> o[0]
    ccl.reduce s[2] -> o[0]
    // becomes
    ccl.reduce s[0] -> o[0]
    ccl.reduce s[2] -> s[1]
    ccl.reduce s[1] -> o[0]
    ```
  }];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
}

def AssignThreadblocksPass : Pass<"ccl-assign-threadblocks",
                                  "mlir::ModuleOp"> {
  let summary = "Group steps into threadblocks and channels within the "
                "runtime's limits, and add cross-threadblock dependencies";
  let description = [{
    Pairs every send with its receive (in order per sender/receiver), and
    gives every message one channel: messages joined by a fused step share
    a channel; a transfer's channel hint is honoured when it fits. First
    fit over channels keeps, per rank and channel, each send peer and each
    receive peer in one threadblock, at most `max-tbs-per-channel`
    threadblocks, and at most `max-steps` steps per threadblock (counting
    the nop steps that extra dependencies cost in MSCCL, unless
    `count-dep-nops=false`, as for MSCCL++ where they cost no step). Steps of a
    threadblock run in schedule order. Then each step waits for the last
    conflicting step (read/write or write/write of an overlapping chunk,
    in-place aliases included) of every other threadblock of its rank.
    Local copies and reductions go to peerless threadblocks, one per
    channel hint (`spread-local`: the copies of different instances run
    side by side; `local-tbs` above 1 also spreads the steps of one hint
    over that many threadblocks, a step joining the one that last wrote a
    slot it writes, so reductions of different chunks run side by side),
    consecutive ones sharing a threadblock up to `max-steps` (or `max-local-steps`,
    when set: 1 gives each its own, which an MSCCL++ plan's threadblock
    packing can then place next to the receive it waits for).

    With `bounded-buffers` (MSCCL), a connection (channel, sender,
    receiver) holds `slots` slots and a send takes 4 per chunk with the
    Simple protocol, 1 with LL and LL128 (see ccl-check-deadlock). Every
    step has a time: the latest schedule key (step, order) at or before it
    in its rank's order. A message is placed on a channel only if, for each
    send of that connection, the receive it must wait for (the one whose
    completion frees room for it) comes strictly earlier in time than the
    send; otherwise its group moves to another channel. Sends that fusion
    moved ahead of their schedule step, which could otherwise wait on a
    receive that waits on them, are spread across channels this way.

    ```mlir
    ccl.gpu 0 chunks(1, 2, 0) {
      ccl.threadblock 0 send 1 recv -1 channel 0 { ccl.send i[0] to 1 }
      ccl.threadblock 1 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    }
    ```
  }];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
  let options = [
    Option<"maxSteps", "max-steps", "int", /*default=*/"64",
           "Most steps per threadblock (MSCCL_MAX_NUM_STEPS = 64)">,
    Option<"maxTbsPerChannel", "max-tbs-per-channel", "int", /*default=*/"32",
           "Most threadblocks per channel and rank (MSCCL: 32)">,
    Option<"maxChannels", "max-channels", "int", /*default=*/"32",
           "Most channels (NCCL MAXCHANNELS = 32)">,
    Option<"countDepNops", "count-dep-nops", "bool", /*default=*/"true",
           "Count the nop step each extra dependency costs in MSCCL">,
    Option<"boundedBuffers", "bounded-buffers", "bool", /*default=*/"true",
           "Keep sends from waiting for room that a later receive frees "
           "(MSCCL's bounded connection buffers)">,
    Option<"slots", "slots", "int", /*default=*/"8",
           "Slots per connection (NCCL_STEPS)">,
    Option<"maxLocalSteps", "max-local-steps", "int", /*default=*/"0",
           "Most steps per peerless threadblock (local copies and "
           "reductions); 0: max-steps">,
    Option<"spreadLocal", "spread-local", "bool", /*default=*/"true",
           "Local steps of different channel hints (instances) get "
           "threadblocks of their own">,
    Option<"localTbs", "local-tbs", "int", /*default=*/"1",
           "With spread-local, most peerless threadblocks per channel hint: "
           "local steps writing different slots form that many chains, "
           "each on a threadblock of its own">,
  ];
}

def CheckDeadlockPass : Pass<"ccl-check-deadlock", "mlir::ModuleOp"> {
  let summary = "Reject step programs that can deadlock or mismatch messages";
  let description = [{
    Checks every threadblock-assigned `ccl.program`:
      * per channel, each peer is sent to (received from) by one
        threadblock of a rank;
      * per channel and ordered rank pair, the sender's sends and the
        receiver's receives agree in number and, in order, in chunk count;
      * the wait-for graph is acyclic. Its edges are program order within
        a threadblock, `after` dependencies, each send to its matching
        receive (receives block) and, with `bounded-buffers`, each send to
        the receive that frees room for it on its connection.
    MSCCL's connections (channel, sender, receiver) hold NCCL_STEPS = 8
    slots; a send takes 4 per chunk with the Simple protocol (SlicePerChunk
    x StepPerSlice = 2 x 2) and 1 with LL and LL128 (`slots` overrides the
    8). Large messages cut every chunk into its own primitive call, the
    worst case the check assumes, so at most two one-chunk Simple sends of
    a connection can be ahead of its receiver.
    A cycle is reported with every rank, threadblock and step on it.

    ```mlir
    // error: deadlock: rank 0 tb 0 step 2 (send to 1) waits for
    //        rank 1 tb 0 step 0 (recv from 0) [room in the connection's
    //        buffer], which waits for ...
    ```
  }];
  let dependentDialects = ["::ccsynth::ccl::CCLDialect"];
  let options = [
    Option<"boundedBuffers", "bounded-buffers", "bool", /*default=*/"true",
           "Sends block when their connection's buffer is full (MSCCL); "
           "false treats sends as buffered without limit">,
    Option<"slots", "slots", "int", /*default=*/"8",
           "Slots per connection (NCCL_STEPS)">,
  ];
}

#endif // CCSYNTH_DIALECT_CCL_TRANSFORMS_PASSES_TD
