//===- CCLInterfaces.td - The interface every step op implements ----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Passes, the deadlock check and the exporters treat the eight step ops
// uniformly through StepOpInterface: which peers a step talks to, which
// local chunk ranges it reads and writes, and which other steps it waits
// for. The method bodies test at compile time which attributes the concrete
// op has, so each op only declares the attributes it needs.
//
//===----------------------------------------------------------------------===//
#ifndef CCSYNTH_DIALECT_CCL_IR_CCLINTERFACES_TD
#define CCSYNTH_DIALECT_CCL_IR_CCLINTERFACES_TD

include "mlir/IR/OpBase.td"

def CCL_StepOpInterface : OpInterface<"StepOpInterface"> {
  let cppNamespace = "::ccsynth::ccl";
  let description = [{
    A step of a per-threadblock program. A step may receive from one peer
    (the threadblock's receive peer), send to one peer (its send peer), read
    a local source range and write a local destination range, each of
    `count` chunks. `deps` lists (threadblock, step index) pairs of the same
    rank that must complete first. `step` and `order` are the schedule time
    the step came from; they order steps before threadblocks are assigned.
  }];

  let methods = [
    InterfaceMethod<"Whether the step sends to a peer.", "bool", "sends",
      (ins), [{ return requires { $_op.getSendPeer(); }; }]>,
    InterfaceMethod<"Whether the step receives from a peer.", "bool",
      "receives", (ins), [{ return requires { $_op.getRecvPeer(); }; }]>,
    InterfaceMethod<"The peer this step sends to, or -1.", "int64_t",
      "getSendPeerOrNone", (ins), [{
        if constexpr (requires { $_op.getSendPeer(); })
          return $_op.getSendPeer();
        else
          return -1;
      }]>,
    InterfaceMethod<"The peer this step receives from, or -1.", "int64_t",
      "getRecvPeerOrNone", (ins), [{
        if constexpr (requires { $_op.getRecvPeer(); })
          return $_op.getRecvPeer();
        else
          return -1;
      }]>,
    InterfaceMethod<"The local range the step reads, if any.",
      "std::optional<::ccsynth::ccl::SlotRef>", "getSrcRef", (ins), [{
        if constexpr (requires { $_op.getSrcBuffer(); })
          return ::ccsynth::ccl::SlotRef{$_op.getSrcBuffer(),
                                         $_op.getSrcOffset()};
        else
          return std::nullopt;
      }]>,
    InterfaceMethod<"The local range the step writes, if any.",
      "std::optional<::ccsynth::ccl::SlotRef>", "getDstRef", (ins), [{
        if constexpr (requires { $_op.getDstBuffer(); })
          return ::ccsynth::ccl::SlotRef{$_op.getDstBuffer(),
                                         $_op.getDstOffset()};
        else
          return std::nullopt;
      }]>,
    InterfaceMethod<"Whether the destination is also read (dst += src).",
      "bool", "readsDst", (ins), [{
        return ConcreteOp::kReadsDst;
      }]>,
    InterfaceMethod<"Whether the received data is reduced with the source.",
      "bool", "reducesReceived", (ins), [{
        return ConcreteOp::kReducesReceived;
      }]>,
    InterfaceMethod<"The MSCCL XML step type (s, r, rcs, ...).",
      "::llvm::StringRef", "getMscclType", (ins), [{
        return ConcreteOp::kMscclType;
      }]>,
    InterfaceMethod<"Number of chunks moved.", "int64_t", "getChunkCount",
      (ins), [{ return $_op.getCount(); }]>,
    InterfaceMethod<"Schedule step this op came from.", "int64_t",
      "getStepKey", (ins), [{ return $_op.getStep(); }]>,
    InterfaceMethod<"Tie-break within a schedule step.", "int64_t",
      "getOrderKey", (ins), [{ return $_op.getOrder(); }]>,
    InterfaceMethod<"Flattened (threadblock, step) pairs this step waits for.",
      "::llvm::ArrayRef<int64_t>", "getDepList", (ins), [{
        if (auto deps = $_op.getDepsAttr())
          return deps.asArrayRef();
        return {};
      }]>,
    InterfaceMethod<"Replaces the dependency list (empty removes it).",
      "void", "setDepList", (ins "::llvm::ArrayRef<int64_t>":$deps), [{
        if (deps.empty())
          $_op.removeDepsAttr();
        else
          $_op.setDepsAttr(
              ::mlir::DenseI64ArrayAttr::get($_op.getContext(), deps));
      }]>,
  ];

  let verify = [{ return ::ccsynth::ccl::verifyStepOp($_op); }];
}

#endif // CCSYNTH_DIALECT_CCL_IR_CCLINTERFACES_TD
