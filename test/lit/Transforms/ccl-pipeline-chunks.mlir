// RUN: ccsynth-opt %s --ccl-pipeline-chunks=parts=2 --ccl-verify-collective | FileCheck %s

// A two-hop broadcast through rank 1's scratch: part p of every transfer
// moves one step later than part p-1, so hop 2 of part 0 overlaps hop 1 of
// part 1. Multi-chunk transfers split into single chunks.

// CHECK-LABEL: ccl.algorithm @bcast
// CHECK-SAME: chunk_factor = 4
// CHECK-SAME: scratch_chunks = 4
// CHECK:      ccl.transfer copy 0 : i[0] -> 1 : s[0] step 0
// CHECK-NEXT: ccl.transfer copy 0 : i[1] -> 1 : s[1] step 1
// CHECK-NEXT: ccl.transfer copy 0 : i[2] -> 1 : s[2] step 0
// CHECK-NEXT: ccl.transfer copy 0 : i[3] -> 1 : s[3] step 1
// CHECK:      ccl.transfer copy 1 : s[0] -> 2 : o[0] step 1
// CHECK-NEXT: ccl.transfer copy 1 : s[1] -> 2 : o[1] step 2
// CHECK-NEXT: ccl.transfer copy 1 : s[2] -> 2 : o[2] step 1
// CHECK-NEXT: ccl.transfer copy 1 : s[3] -> 2 : o[3] step 2
ccl.algorithm @bcast attributes {collective = "broadcast", ranks = 3,
    chunk_factor = 2, input_chunks = 2, output_chunks = 2, scratch_chunks = 2} {
  ccl.transfer copy 0:i[0] -> 0:o[0] count 2 step 0
  ccl.transfer copy 0:i[0] -> 1:s[0] count 2 step 0
  ccl.transfer copy 1:s[0] -> 1:o[0] count 2 step 1
  ccl.transfer copy 1:s[0] -> 2:o[0] count 2 step 1
}
