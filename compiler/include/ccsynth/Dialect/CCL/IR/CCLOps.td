//===- CCLOps.td - Chunk-level and step-level ops of the ccl dialect ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Chunk level: ccl.algorithm, ccl.transfer.
// Step level:  ccl.program, ccl.gpu, ccl.threadblock and the eight steps
//              (ccl.send, ccl.recv, ccl.recv_copy_send, ccl.recv_reduce_copy,
//              ccl.recv_reduce_send, ccl.recv_reduce_copy_send, ccl.copy,
//              ccl.reduce); cross-threadblock dependencies are the `after`
//              list every step carries.
//
//===----------------------------------------------------------------------===//
#ifndef CCSYNTH_DIALECT_CCL_IR_CCLOPS_TD
#define CCSYNTH_DIALECT_CCL_IR_CCLOPS_TD

include "ccsynth/Dialect/CCL/IR/CCLBase.td"
include "ccsynth/Dialect/CCL/IR/CCLInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

/// Attributes shared by ccl.algorithm and ccl.program: the collective the
/// algorithm implements and how the runtime may select it.
defvar CCL_CollectiveMetadata = (ins
  SymbolNameAttr:$sym_name,
  StrAttr:$collective,
  OptionalAttr<StrAttr>:$collective_name,
  CCL_IntAttr:$ranks,
  DefaultValuedAttr<CCL_IntAttr, "1">:$chunk_factor,
  DefaultValuedAttr<CCL_IntAttr, "0">:$root,
  UnitAttr:$inplace,
  CCL_IntAttr:$input_chunks,
  CCL_IntAttr:$output_chunks,
  DefaultValuedStrAttr<StrAttr, "Simple">:$protocol,
  DefaultValuedAttr<CCL_IntAttr, "0">:$min_bytes,
  DefaultValuedAttr<CCL_IntAttr, "0">:$max_bytes,
  OptionalAttr<ArrayAttr>:$precondition,
  OptionalAttr<ArrayAttr>:$postcondition,
  OptionalAttr<StrAttr>:$topology,
  OptionalAttr<StrAttr>:$origin
);

defvar CCL_MetadataDoc = [{
    Collective metadata: `collective` is a built-in kind (allgather,
    reducescatter, allreduce, broadcast, reduce, gather, scatter, alltoall)
    or `custom`; `ranks`, `chunk_factor`, `root` and `inplace` build the
    core model's Collective; `input_chunks`/`output_chunks` are the per-rank
    buffer sizes in chunks (checked against the collective). A custom
    collective also carries `collective_name`, `precondition` (per rank, an
    array of input value ids, -1 = undefined) and `postcondition` (per rank,
    per output chunk, an array of value ids or `unit` when unconstrained).
    `protocol` (Simple, LL, LL128) and the byte range `[min_bytes,
    max_bytes]` (0 = unbounded) tell the runtime when to pick the
    algorithm.
}];

//===----------------------------------------------------------------------===//
// Chunk level
//===----------------------------------------------------------------------===//

def CCL_AlgorithmOp : CCL_Op<"algorithm", [Symbol, SingleBlock, NoTerminator,
    IsolatedFromAbove]> {
  let summary = "A chunk-level algorithm: the transfers of one schedule";
  let description = !strconcat([{
    Holds the `ccl.transfer`s of a chunk-level schedule, the form in which
    synthesized, baseline and DSL schedules enter the compiler. Transfers of
    step s see everything written by steps < s; transfers of one step may
    run at once. `scratch_chunks` sizes every rank's scratch buffer.
  }], CCL_MetadataDoc, [{

    Example (a 2-rank out-of-place AllGather):

    ```mlir
    ccl.algorithm @ag2 attributes {collective = "allgather", ranks = 2,
                                   input_chunks = 1, output_chunks = 2} {
      ccl.transfer copy 0:i[0] -> 0:o[0] step 0
      ccl.transfer copy 1:i[0] -> 1:o[1] step 0
      ccl.transfer copy 0:i[0] -> 1:o[0] step 0
      ccl.transfer copy 1:i[0] -> 0:o[1] step 0
    }
    ```
  }]);
  let arguments = !con(CCL_CollectiveMetadata,
                       (ins DefaultValuedAttr<CCL_IntAttr, "0">:$scratch_chunks));
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Rebuilds the core model's collective from the metadata.
    ::ccsynth::Expected<::ccsynth::Collective> buildCollective();
  }];
}

def CCL_TransferOp : CCL_Op<"transfer", [HasParent<"AlgorithmOp">]> {
  let summary = "Moves `count` consecutive chunks between two ranks' buffers";
  let description = [{
    Copies (or reduces into the destination) `count` chunks starting at
    `src_rank:src_buffer[src_index]` to `dst_rank:dst_buffer[dst_index]`
    during schedule step `step`. A transfer within one rank is a local copy
    or reduction. `link` names the topology link to use; `channel` and
    `threadblock` are optional lowering hints.

    `switch_reduce` and `multicast` go through the in-network switch
    `through N` (index into the topology's switches) and act in groups: the
    switch_reduce transfers of one step through one switch into one
    destination are one reduction in the switch (each is one contribution;
    the destination may be one of the sources), the multicast transfers of
    one step through one switch from one source are one multicast (each is
    one destination). They name no link. They are proven and exported to
    schedules; no step-level op lowers them yet.

    ```mlir
    ccl.transfer copy 0:i[0] -> 1:o[0] step 0
    ccl.transfer reduce 1:s[2] -> 1:i[2] count 2 step 3 {channel = 1}
    ccl.transfer switch_reduce 1:i[0] -> 0:o[0] step 0 through 0
    ccl.transfer multicast 0:o[0] -> 1:o[0] step 1 through 0
    ```
  }];
  let arguments = (ins
    CCL_TransferKindAttr:$kind,
    CCL_IntAttr:$src_rank, CCL_BufferAttr:$src_buffer, CCL_IntAttr:$src_index,
    CCL_IntAttr:$dst_rank, CCL_BufferAttr:$dst_buffer, CCL_IntAttr:$dst_index,
    DefaultValuedAttr<CCL_IntAttr, "1">:$count,
    CCL_IntAttr:$step,
    OptionalAttr<CCL_IntAttr>:$link,
    OptionalAttr<CCL_IntAttr>:$channel,
    OptionalAttr<CCL_IntAttr>:$threadblock,
    OptionalAttr<CCL_IntAttr>:$via_switch
  );
  let assemblyFormat = [{
    $kind $src_rank `:` $src_buffer `[` $src_index `]` `->`
    $dst_rank `:` $dst_buffer `[` $dst_index `]` (`count` $count^)?
    `step` $step (`through` $via_switch^)? attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Step level: containers
//===----------------------------------------------------------------------===//

def CCL_ProgramOp : CCL_Op<"program", [Symbol, SingleBlock, NoTerminator,
    IsolatedFromAbove]> {
  let summary = "A step-level program: one ccl.gpu per rank";
  let description = !strconcat([{
    The lowered form of an algorithm. It holds exactly one `ccl.gpu` per
    rank. Before threadblock assignment a gpu holds its steps directly (in
    schedule order); afterwards it holds `ccl.threadblock`s. This is what
    the MSCCL XML and MSCCL++ exporters, and the CUDA code generator,
    consume.
  }], CCL_MetadataDoc, [{

    ```mlir
    ccl.program @ag2 attributes {collective = "allgather", ranks = 2,
                                 input_chunks = 1, output_chunks = 2} {
      ccl.gpu 0 chunks(1, 2, 0) {
        ccl.threadblock 0 send 1 recv 1 channel 0 {
          ccl.send i[0] to 1
          ccl.recv from 1 -> o[1]
        }
        ccl.threadblock 1 send -1 recv -1 channel 0 {
          ccl.copy i[0] -> o[0]
        }
      }
      ccl.gpu 1 chunks(1, 2, 0) { ... }
    }
    ```
  }]);
  let arguments = CCL_CollectiveMetadata;
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Rebuilds the core model's collective from the metadata.
    ::ccsynth::Expected<::ccsynth::Collective> buildCollective();
    /// True when every gpu holds threadblocks (or nothing).
    bool isAssigned();
  }];
}

def CCL_GpuOp : CCL_Op<"gpu", [HasParent<"ProgramOp">, SingleBlock,
    NoTerminator]> {
  let summary = "The program of one rank";
  let description = [{
    Holds the steps (before threadblock assignment) or the threadblocks
    (after) of rank `rank`, and the rank's buffer sizes in chunks:
    `chunks(input, output, scratch)`. Threadblock ids are dense from 0.

    ```mlir
    ccl.gpu 0 chunks(1, 8, 0) {
      ccl.send i[0] to 1 {step = 0, order = 1}
      ccl.recv from 7 -> o[7] {step = 0, order = 7}
    }
    ```
  }];
  let arguments = (ins CCL_IntAttr:$rank, CCL_IntAttr:$input_chunks,
                   CCL_IntAttr:$output_chunks,
                   DefaultValuedAttr<CCL_IntAttr, "0">:$scratch_chunks);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $rank `chunks` `(` $input_chunks `,` $output_chunks `,` $scratch_chunks `)`
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Chunk count of a buffer of this rank.
    int64_t bufferSize(::ccsynth::ccl::Buffer buffer);
  }];
}

def CCL_ThreadblockOp : CCL_Op<"threadblock", [HasParent<"GpuOp">,
    SingleBlock, NoTerminator]> {
  let summary = "A straight-line step program run by one threadblock";
  let description = [{
    Runs its steps in order. A threadblock sends to at most one peer
    (`send`, -1 = none) and receives from at most one (`recv`) over NCCL
    channel `channel`; on one channel each peer is used by at most one
    threadblock per direction, so sends and receives pair up in order. A
    step's `after [tb:step, ...]` waits for steps of other threadblocks of
    the same rank.

    ```mlir
    ccl.threadblock 0 send 1 recv 3 channel 0 {
      ccl.send i[0] to 1
      ccl.recv_copy_send from 3 -> o[3] to 1
      ccl.recv from 3 -> o[2] after [1:0]
    }
    ```
  }];
  let arguments = (ins CCL_IntAttr:$id, CCL_IntAttr:$send_peer,
                   CCL_IntAttr:$recv_peer, CCL_IntAttr:$channel);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $id `send` $send_peer `recv` $recv_peer `channel` $channel
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Step level: steps
//===----------------------------------------------------------------------===//

/// Arguments every step carries: its chunk count, its schedule time and the
/// cross-threadblock steps it waits for.
defvar CCL_StepCommon = (ins
  DefaultValuedAttr<CCL_IntAttr, "1">:$count,
  DefaultValuedAttr<CCL_IntAttr, "0">:$step,
  DefaultValuedAttr<CCL_IntAttr, "0">:$order,
  OptionalAttr<DenseI64ArrayAttr>:$deps
);

class CCL_StepOp<string mnemonic, string mscclType, bit readsDst,
                 bit reducesReceived>
    : CCL_Op<mnemonic, [ParentOneOf<["GpuOp", "ThreadblockOp"]>,
                        CCL_StepOpInterface]> {
  let extraClassDeclaration = [{
    static constexpr const char *kMscclType = "}] # mscclType # [{";
    static constexpr bool kReadsDst = }] # !if(readsDst, "true", "false") # [{;
    static constexpr bool kReducesReceived = }] #
        !if(reducesReceived, "true", "false") # [{;
  }];
}

defvar CCL_StepDoc = [{

    Common to every step: `count` chunks (default 1); `after [tb:step, ...]`
    lists steps of other threadblocks of this rank that must complete
    first; `step`/`order` (attribute dictionary) record the schedule time
    the step was lowered from and order steps before threadblock
    assignment.
}];

def CCL_SendOp : CCL_StepOp<"send", "s", 0, 0> {
  let summary = "Sends a local chunk range to the send peer";
  let description = !strconcat([{
    Sends `count` chunks starting at `src` to peer `to` (MSCCL step `s`).

    ```mlir
    ccl.send i[0] to 1 count 2
    ```
  }], CCL_StepDoc);
  let arguments = !con((ins CCL_BufferAttr:$src_buffer,
                            CCL_IntAttr:$src_offset, CCL_IntAttr:$send_peer),
                       CCL_StepCommon);
  let assemblyFormat = [{
    $src_buffer `[` $src_offset `]` `to` $send_peer (`count` $count^)?
    custom<Deps>($deps) attr-dict
  }];
}

def CCL_RecvOp : CCL_StepOp<"recv", "r", 0, 0> {
  let summary = "Receives chunks from the receive peer into a local range";
  let description = !strconcat([{
    Receives `count` chunks from peer `from` into `dst` (MSCCL step `r`).

    ```mlir
    ccl.recv from 0 -> o[0]
    ```
  }], CCL_StepDoc);
  let arguments = !con((ins CCL_IntAttr:$recv_peer, CCL_BufferAttr:$dst_buffer,
                            CCL_IntAttr:$dst_offset),
                       CCL_StepCommon);
  let assemblyFormat = [{
    `from` $recv_peer `->` $dst_buffer `[` $dst_offset `]` (`count` $count^)?
    custom<Deps>($deps) attr-dict
  }];
}

def CCL_RecvCopySendOp : CCL_StepOp<"recv_copy_send", "rcs", 0, 0> {
  let summary = "Receives chunks, stores them and forwards them";
  let description = !strconcat([{
    Receives `count` chunks from `from`, writes them to `dst` and sends
    them on to `to` in one pass (MSCCL step `rcs`), the fusion of a `recv`
    and a later `send` of the same range.

    ```mlir
    ccl.recv_copy_send from 0 -> o[0] to 2
    ```
  }], CCL_StepDoc);
  let arguments = !con((ins CCL_IntAttr:$recv_peer, CCL_BufferAttr:$dst_buffer,
                            CCL_IntAttr:$dst_offset, CCL_IntAttr:$send_peer),
                       CCL_StepCommon);
  let assemblyFormat = [{
    `from` $recv_peer `->` $dst_buffer `[` $dst_offset `]` `to` $send_peer
    (`count` $count^)? custom<Deps>($deps) attr-dict
  }];
}

def CCL_RecvReduceCopyOp : CCL_StepOp<"recv_reduce_copy", "rrc", 0, 1> {
  let summary = "Receives chunks, reduces them with a local range, stores";
  let description = !strconcat([{
    `dst = received + src` over `count` chunks (MSCCL step `rrc`). The
    lowering of a reduce transfer uses `src == dst`.

    ```mlir
    ccl.recv_reduce_copy from 1 with i[0] -> i[0]
    ```
  }], CCL_StepDoc);
  let arguments = !con((ins CCL_IntAttr:$recv_peer, CCL_BufferAttr:$src_buffer,
                            CCL_IntAttr:$src_offset, CCL_BufferAttr:$dst_buffer,
                            CCL_IntAttr:$dst_offset),
                       CCL_StepCommon);
  let assemblyFormat = [{
    `from` $recv_peer `with` $src_buffer `[` $src_offset `]` `->`
    $dst_buffer `[` $dst_offset `]` (`count` $count^)? custom<Deps>($deps)
    attr-dict
  }];
}

def CCL_RecvReduceSendOp : CCL_StepOp<"recv_reduce_send", "rrs", 0, 1> {
  let summary = "Receives chunks, reduces them with a local range, forwards";
  let description = !strconcat([{
    Sends `received + src` to `to` without storing it locally (MSCCL step
    `rrs`); used when the partial sum is dead after the send.

    ```mlir
    ccl.recv_reduce_send from 1 with s[0] to 2
    ```
  }], CCL_StepDoc);
  let arguments = !con((ins CCL_IntAttr:$recv_peer, CCL_BufferAttr:$src_buffer,
                            CCL_IntAttr:$src_offset, CCL_IntAttr:$send_peer),
                       CCL_StepCommon);
  let assemblyFormat = [{
    `from` $recv_peer `with` $src_buffer `[` $src_offset `]` `to` $send_peer
    (`count` $count^)? custom<Deps>($deps) attr-dict
  }];
}

def CCL_RecvReduceCopySendOp
    : CCL_StepOp<"recv_reduce_copy_send", "rrcs", 0, 1> {
  let summary = "Receives, reduces with a local range, stores and forwards";
  let description = !strconcat([{
    `dst = received + src`, then sends `dst` to `to` (MSCCL step `rrcs`).

    ```mlir
    ccl.recv_reduce_copy_send from 1 with i[0] -> i[0] to 2
    ```
  }], CCL_StepDoc);
  let arguments = !con((ins CCL_IntAttr:$recv_peer, CCL_BufferAttr:$src_buffer,
                            CCL_IntAttr:$src_offset, CCL_BufferAttr:$dst_buffer,
                            CCL_IntAttr:$dst_offset, CCL_IntAttr:$send_peer),
                       CCL_StepCommon);
  let assemblyFormat = [{
    `from` $recv_peer `with` $src_buffer `[` $src_offset `]` `->`
    $dst_buffer `[` $dst_offset `]` `to` $send_peer (`count` $count^)?
    custom<Deps>($deps) attr-dict
  }];
}

def CCL_CopyOp : CCL_StepOp<"copy", "cpy", 0, 0> {
  let summary = "Copies a local chunk range";
  let description = !strconcat([{
    `dst = src` within one rank (MSCCL step `cpy`).

    ```mlir
    ccl.copy i[0] -> o[0]
    ```
  }], CCL_StepDoc);
  let arguments = !con((ins CCL_BufferAttr:$src_buffer, CCL_IntAttr:$src_offset,
                            CCL_BufferAttr:$dst_buffer, CCL_IntAttr:$dst_offset),
                       CCL_StepCommon);
  let assemblyFormat = [{
    $src_buffer `[` $src_offset `]` `->` $dst_buffer `[` $dst_offset `]`
    (`count` $count^)? custom<Deps>($deps) attr-dict
  }];
}

def CCL_ReduceOp : CCL_StepOp<"reduce", "re", 1, 0> {
  let summary = "Reduces a local chunk range into another";
  let description = !strconcat([{
    `dst = dst + src` within one rank (MSCCL step `re`).

    ```mlir
    ccl.reduce s[0] -> i[0]
    ```
  }], CCL_StepDoc);
  let arguments = !con((ins CCL_BufferAttr:$src_buffer, CCL_IntAttr:$src_offset,
                            CCL_BufferAttr:$dst_buffer, CCL_IntAttr:$dst_offset),
                       CCL_StepCommon);
  let assemblyFormat = [{
    $src_buffer `[` $src_offset `]` `->` $dst_buffer `[` $dst_offset `]`
    (`count` $count^)? custom<Deps>($deps) attr-dict
  }];
}

#endif // CCSYNTH_DIALECT_CCL_IR_CCLOPS_TD
