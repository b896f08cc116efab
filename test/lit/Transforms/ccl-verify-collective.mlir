// RUN: ccsynth-opt %s --ccl-verify-collective | FileCheck %s

// A correct 2-rank AllGather and a correct in-place AllReduce through
// scratch pass unchanged.

// CHECK-LABEL: ccl.algorithm @ag2
// CHECK-COUNT-4: ccl.transfer copy
ccl.algorithm @ag2 attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[0] -> 1:o[1] step 0
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0
  ccl.transfer copy 1:i[0] -> 0:o[1] step 0
}

// CHECK-LABEL: ccl.algorithm @ar2
// CHECK: ccl.transfer copy 0 : i[0] -> 1 : s[0] step 0
// CHECK: ccl.transfer reduce 1 : s[0] -> 1 : i[0] step 1
// CHECK: ccl.transfer copy 1 : i[0] -> 0 : i[0] step 2
ccl.algorithm @ar2 attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1, inplace, scratch_chunks = 1} {
  ccl.transfer copy 0:i[0] -> 1:s[0] step 0
  ccl.transfer reduce 1:s[0] -> 1:i[0] step 1
  ccl.transfer copy 1:i[0] -> 0:i[0] step 2
}
