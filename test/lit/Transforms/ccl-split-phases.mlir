// RUN: ccsynth-opt %s --ccl-split-phases --ccl-verify-collective | FileCheck %s
// RUN: ccsynth-opt %s --ccl-split-phases --ccl-instances=count=2 --ccl-verify-collective | FileCheck %s --check-prefix=INST

// An AllReduce on two ranks: each rank reduces one chunk (phase 0), then
// sends the finished chunk back (phase 1, the odd channel). A hint of 1
// becomes 2 (phase 0) on the even channel of its pair.
// CHECK-LABEL: ccl.algorithm @ar2
// CHECK-NEXT: ccl.transfer copy 0 : i[0] -> 0 : o[0] step 0 {channel = 0 : i64}
// CHECK-NEXT: ccl.transfer copy 1 : i[1] -> 1 : o[1] step 0 {channel = 0 : i64}
// CHECK-NEXT: ccl.transfer reduce 1 : i[0] -> 0 : o[0] step 1 {channel = 2 : i64}
// CHECK-NEXT: ccl.transfer reduce 0 : i[1] -> 1 : o[1] step 1 {channel = 0 : i64}
// CHECK-NEXT: ccl.transfer copy 0 : o[0] -> 1 : o[0] step 2 {channel = 1 : i64}
// CHECK-NEXT: ccl.transfer copy 1 : o[1] -> 0 : o[1] step 2 {channel = 1 : i64}
// Instances multiply the hints: phase p, instance k on channel 2p + k.
// INST-LABEL: ccl.algorithm @ar2
// INST: ccl.transfer copy 0 : o[0] -> 1 : o[0] step 2 {channel = 2 : i64}
// INST-NEXT: ccl.transfer copy 0 : o[1] -> 1 : o[1] step 2 {channel = 3 : i64}
ccl.algorithm @ar2 attributes {collective = "allreduce", ranks = 2,
    chunk_factor = 2, input_chunks = 2, output_chunks = 2} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[1] -> 1:o[1] step 0
  ccl.transfer reduce 1:i[0] -> 0:o[0] step 1 {channel = 1}
  ccl.transfer reduce 0:i[1] -> 1:o[1] step 1
  ccl.transfer copy 0:o[0] -> 1:o[0] step 2
  ccl.transfer copy 1:o[1] -> 0:o[1] step 2
}

// The phase of a transfer is that of its source when it runs, in step
// order, not in the order of the ops.
// CHECK-LABEL: ccl.algorithm @order
// CHECK: ccl.transfer copy 1 : o[0] -> 0 : o[0] step 2 {channel = 1 : i64}
// CHECK: ccl.transfer reduce 0 : i[0] -> 1 : o[0] step 1 {channel = 0 : i64}
ccl.algorithm @order attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1} {
  ccl.transfer copy 1:i[0] -> 1:o[0] step 0
  ccl.transfer copy 1:o[0] -> 0:o[0] step 2
  ccl.transfer reduce 0:i[0] -> 1:o[0] step 1
}

// In place, output chunk 0 is input chunk 0: reduced into i[0], it is
// finished when read as o[0].
// CHECK-LABEL: ccl.algorithm @inplace
// CHECK: ccl.transfer reduce 1 : i[0] -> 0 : i[0] step 0 {channel = 0 : i64}
// CHECK: ccl.transfer copy 0 : o[0] -> 1 : o[0] step 1 {channel = 1 : i64}
ccl.algorithm @inplace attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1, inplace} {
  ccl.transfer reduce 1:i[0] -> 0:i[0] step 0
  ccl.transfer copy 0:o[0] -> 1:o[0] step 1
}

// No reduction (AllGather), and a reduction whose transfers between ranks
// all reduce (ReduceScatter): nothing to split, no hints added.
// CHECK-LABEL: ccl.algorithm @ag
// CHECK-NOT: channel
// CHECK-LABEL: ccl.algorithm @rs
// CHECK-NOT: channel
// CHECK: }
ccl.algorithm @ag attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[0] -> 1:o[1] step 0
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0
  ccl.transfer copy 1:i[0] -> 0:o[1] step 0
}
ccl.algorithm @rs attributes {collective = "reducescatter", ranks = 2,
    input_chunks = 2, output_chunks = 1} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[1] -> 1:o[0] step 0
  ccl.transfer reduce 1:i[0] -> 0:o[0] step 1
  ccl.transfer reduce 0:i[1] -> 1:o[0] step 1
}
