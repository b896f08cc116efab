// RUN: ccsynth-opt %s | ccsynth-opt | FileCheck %s
// RUN: ccsynth-opt %s --ccl-verify-collective | FileCheck %s
// RUN: not ccsynth-opt %s --ccl-lower-to-steps 2>&1 | FileCheck %s --check-prefix=LOWERED

// Switch operations at the chunk level: an NVLS AllReduce on 3 ranks
// (every rank's chunk k reduced in switch 0 into rank k, then multicast
// from there), printed back, proven by the collective's verifier, and
// refused by the lowering at the first one.

// CHECK-LABEL: ccl.algorithm @nvls3
// CHECK: ccl.transfer switch_reduce 0 : i[0] -> 0 : o[0] step 0 through 0
// CHECK: ccl.transfer switch_reduce 1 : i[0] -> 0 : o[0] step 0 through 0
// CHECK: ccl.transfer multicast 0 : o[0] -> 1 : o[0] step 1 through 0
// CHECK: ccl.transfer multicast 2 : o[2] -> 1 : o[2] step 1 through 0 {channel = 1 : i64}
// LOWERED: switch-transfers.mlir:[[#@LINE+3]]:3: error: ccl-lower-to-steps: a switch_reduce through switch 0 has no step-level op yet
ccl.algorithm @nvls3 attributes {collective = "allreduce", ranks = 3,
    chunk_factor = 3, input_chunks = 3, output_chunks = 3} {
  ccl.transfer switch_reduce 0:i[0] -> 0:o[0] step 0 through 0
  ccl.transfer switch_reduce 1:i[0] -> 0:o[0] step 0 through 0
  ccl.transfer switch_reduce 2:i[0] -> 0:o[0] step 0 through 0
  ccl.transfer switch_reduce 0:i[1] -> 1:o[1] step 0 through 0
  ccl.transfer switch_reduce 1:i[1] -> 1:o[1] step 0 through 0
  ccl.transfer switch_reduce 2:i[1] -> 1:o[1] step 0 through 0
  ccl.transfer switch_reduce 0:i[2] -> 2:o[2] step 0 through 0
  ccl.transfer switch_reduce 1:i[2] -> 2:o[2] step 0 through 0
  ccl.transfer switch_reduce 2:i[2] -> 2:o[2] step 0 through 0
  ccl.transfer multicast 0:o[0] -> 1:o[0] step 1 through 0
  ccl.transfer multicast 0:o[0] -> 2:o[0] step 1 through 0
  ccl.transfer multicast 1:o[1] -> 0:o[1] step 1 through 0
  ccl.transfer multicast 1:o[1] -> 2:o[1] step 1 through 0
  ccl.transfer multicast 2:o[2] -> 0:o[2] step 1 through 0
  ccl.transfer multicast 2:o[2] -> 1:o[2] step 1 through 0 {channel = 1}
}
