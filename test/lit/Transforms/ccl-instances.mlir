// RUN: ccsynth-opt %s --ccl-instances=count=2 --ccl-verify-collective | FileCheck %s

// Each chunk becomes two sub-chunks; each transfer becomes two, one per
// instance, hinted onto channels base*2+k. The result still verifies.

// CHECK-LABEL: ccl.algorithm @ag2
// CHECK-SAME: chunk_factor = 2
// CHECK-SAME: input_chunks = 2
// CHECK-SAME: output_chunks = 4
// CHECK-NEXT: ccl.transfer copy 0 : i[0] -> 0 : o[0] step 0 {channel = 0 : i64}
// CHECK-NEXT: ccl.transfer copy 0 : i[1] -> 0 : o[1] step 0 {channel = 1 : i64}
// CHECK-NEXT: ccl.transfer copy 1 : i[0] -> 1 : o[2] step 0 {channel = 0 : i64}
// CHECK-NEXT: ccl.transfer copy 1 : i[1] -> 1 : o[3] step 0 {channel = 1 : i64}
// CHECK-NEXT: ccl.transfer copy 0 : i[0] -> 1 : o[0] step 0 {channel = 2 : i64}
// CHECK-NEXT: ccl.transfer copy 0 : i[1] -> 1 : o[1] step 0 {channel = 3 : i64}
ccl.algorithm @ag2 attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[0] -> 1:o[1] step 0
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0 {channel = 1}
  ccl.transfer copy 1:i[0] -> 0:o[1] step 0
}

// Multi-chunk transfers move contiguous pieces; scratch doubles.
// CHECK-LABEL: ccl.algorithm @bcast
// CHECK-SAME: chunk_factor = 4
// CHECK-SAME: scratch_chunks = 4
// CHECK: ccl.transfer copy 0 : i[0] -> 1 : s[0] count 2 step 0 {channel = 0 : i64}
// CHECK-NEXT: ccl.transfer copy 0 : i[2] -> 1 : s[2] count 2 step 0 {channel = 1 : i64}
ccl.algorithm @bcast attributes {collective = "broadcast", ranks = 3,
    chunk_factor = 2, input_chunks = 2, output_chunks = 2, scratch_chunks = 2} {
  ccl.transfer copy 0:i[0] -> 0:o[0] count 2 step 0
  ccl.transfer copy 0:i[0] -> 1:s[0] count 2 step 0
  ccl.transfer copy 1:s[0] -> 1:o[0] count 2 step 1
  ccl.transfer copy 1:s[0] -> 2:o[0] count 2 step 1
}

// A custom collective's conditions are refined value by value.
// CHECK-LABEL: ccl.algorithm @shift
// CHECK-SAME: postcondition = {{\[}}[unit, unit], [array<i64: 0>, array<i64: 1>]]
// CHECK-SAME: precondition = [array<i64: 0, 1>, array<i64: -1, -1>]
ccl.algorithm @shift attributes {collective = "custom",
    collective_name = "shift", ranks = 2, input_chunks = 1,
    output_chunks = 1, precondition = [array<i64: 0>, array<i64: -1>],
    postcondition = [[unit], [array<i64: 0>]]} {
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0
}
