// RUN: ccsynth-opt %s --ccl-default-pipeline | FileCheck %s
// RUN: ccsynth-opt %s --ccl-default-pipeline="instances=2" | FileCheck %s --check-prefix=INST
// RUN: ccsynth-opt %s --ccl-default-pipeline | ccsynth-translate --ccl-to-msccl-xml | ccsynth-translate --import-msccl-xml | ccsynth-opt --ccl-verify-collective

// A 3-rank ring AllGather: verified, lowered, fused into forwarding steps,
// assigned to one ring threadblock plus a local one per rank, checked.
// CHECK-LABEL: ccl.program @ring3
// CHECK:      ccl.gpu 0 chunks(1, 3, 0) {
// CHECK-NEXT:   ccl.threadblock 0 send 1 recv 2 channel 0 {
// CHECK-NEXT:     ccl.send i[0] to 1
// CHECK-NEXT:     ccl.recv_copy_send from 2 -> o[2] to 1
// CHECK-NEXT:     ccl.recv from 2 -> o[1]
// CHECK:        ccl.threadblock 1 send -1 recv -1 channel 0 {
// CHECK-NEXT:     ccl.copy i[0] -> o[0]
// With two instances every rank runs the ring twice, on channels 0 and 1.
// INST-LABEL: ccl.program @ring3
// INST-SAME: chunk_factor = 2
// INST: ccl.threadblock {{[0-9]+}} send 1 recv 2 channel 0
// INST: ccl.threadblock {{[0-9]+}} send 1 recv 2 channel 1
ccl.algorithm @ring3 attributes {collective = "allgather", ranks = 3,
    input_chunks = 1, output_chunks = 3} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[0] -> 1:o[1] step 0
  ccl.transfer copy 2:i[0] -> 2:o[2] step 0
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0
  ccl.transfer copy 1:i[0] -> 2:o[1] step 0
  ccl.transfer copy 2:i[0] -> 0:o[2] step 0
  ccl.transfer copy 1:o[0] -> 2:o[0] step 1
  ccl.transfer copy 2:o[1] -> 0:o[1] step 1
  ccl.transfer copy 0:o[2] -> 1:o[2] step 1
}
