//===- CCLBase.td - The ccl dialect, its enums and attribute kinds --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The `ccl` dialect describes collective-communication algorithms at two
// levels:
//   * chunk level (`ccl.algorithm` holding `ccl.transfer`s): what moves
//     where and when, exactly the core model's Schedule;
//   * step level (`ccl.program` > `ccl.gpu` > `ccl.threadblock` > steps):
//     per rank, per threadblock straight-line programs with send/recv peers,
//     channels, buffer offsets/counts and cross-threadblock dependencies,
//     the shape of MSCCL's XML and the input of the CUDA code generator.
//
//===----------------------------------------------------------------------===//
#ifndef CCSYNTH_DIALECT_CCL_IR_CCLBASE_TD
#define CCSYNTH_DIALECT_CCL_IR_CCLBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/AttrTypeBase.td"

def CCL_Dialect : Dialect {
  let name = "ccl";
  let cppNamespace = "::ccsynth::ccl";
  let summary = "Collective communication algorithms: chunk transfers and "
                "per-threadblock step programs";
  let description = [{
    The ccl dialect is ccsynth's compiler IR. A synthesized, baseline or DSL
    schedule is imported as a chunk-level `ccl.algorithm`; passes replicate
    and pipeline it, lower it to a step-level `ccl.program`, fuse steps,
    assign threadblocks and channels and check the result for deadlocks;
    exporters then write MSCCL XML or an MSCCL++ execution plan.

    The step level is deliberately close to a GPU program: every
    `ccl.threadblock` is a straight-line list of steps with one send peer,
    one receive peer and one channel, every step names local buffer offsets
    and a chunk count, and cross-threadblock ordering is explicit. A CUDA
    code generator can therefore emit one kernel branch per threadblock
    without re-deriving any schedule information, and a plugin packager can
    key the generated code by the program's collective, rank count,
    protocol and size range.

    ```mlir
    ccl.algorithm @ring attributes {collective = "allgather", ranks = 2, ...} {
      ccl.transfer copy 0:i[0] -> 1:o[0] step 0
      ccl.transfer copy 1:i[0] -> 0:o[1] step 0
    }
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def CCL_BufferInput : I32EnumAttrCase<"Input", 0, "i">;
def CCL_BufferOutput : I32EnumAttrCase<"Output", 1, "o">;
def CCL_BufferScratch : I32EnumAttrCase<"Scratch", 2, "s">;
def CCL_BufferAttr : I32EnumAttr<"Buffer",
    "a rank-local buffer: input (i), output (o) or scratch (s)",
    [CCL_BufferInput, CCL_BufferOutput, CCL_BufferScratch]> {
  let cppNamespace = "::ccsynth::ccl";
}

def CCL_TransferCopy : I32EnumAttrCase<"Copy", 0, "copy">;
def CCL_TransferReduce : I32EnumAttrCase<"Reduce", 1, "reduce">;
def CCL_TransferSwitchReduce
    : I32EnumAttrCase<"SwitchReduce", 2, "switch_reduce">;
def CCL_TransferMulticast : I32EnumAttrCase<"Multicast", 3, "multicast">;
def CCL_TransferKindAttr : I32EnumAttr<"TransferKind",
    "what a transfer does at its destination",
    [CCL_TransferCopy, CCL_TransferReduce, CCL_TransferSwitchReduce,
     CCL_TransferMulticast]> {
  let cppNamespace = "::ccsynth::ccl";
}

def CCL_ProtoSimple : I32EnumAttrCase<"Simple", 0, "Simple">;
def CCL_ProtoLL : I32EnumAttrCase<"LL", 1, "LL">;
def CCL_ProtoLL128 : I32EnumAttrCase<"LL128", 2, "LL128">;
def CCL_ProtocolAttr : I32EnumAttr<"Protocol",
    "NCCL transport protocol the lowered program runs with",
    [CCL_ProtoSimple, CCL_ProtoLL, CCL_ProtoLL128]> {
  let cppNamespace = "::ccsynth::ccl";
}

//===----------------------------------------------------------------------===//
// Attribute kinds
//===----------------------------------------------------------------------===//

/// A signed 64-bit integer attribute; ranks, peers (-1 = none), offsets and
/// counts all use it so that accessors return int64_t.
def CCL_IntAttr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                               "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

class CCL_Op<string mnemonic, list<Trait> traits = []>
    : Op<CCL_Dialect, mnemonic, traits>;

#endif // CCSYNTH_DIALECT_CCL_IR_CCLBASE_TD
