// RUN: ccsynth-opt %s --ccl-coalesce-transfers --ccl-verify-collective | FileCheck %s
// RUN: ccsynth-opt %s --ccl-default-pipeline=coalesce=true | FileCheck %s --check-prefix=PIPE

// In the default pipeline (coalesce=true) the joined transfers lower to
// multi-chunk steps that fusion forwards whole.
// PIPE-LABEL: ccl.program @bcast3
// PIPE: ccl.send i[0] to 1 count 2
// PIPE: ccl.recv_copy_send from 0 -> s[0] to 2 count 2
// PIPE: ccl.recv from 1 -> o[0] count 2

// Rank 1 receives two chunks into scratch 2 and 0 and forwards both: they
// are renamed to 0 and 1 (unused scratch 1 becomes 2), and each hop moves
// them as one transfer of two chunks. The chunk that lands in rank 1's
// output travels on its own (other buffers), as do local copies of it.
// CHECK-LABEL: ccl.algorithm @bcast3
// CHECK-NEXT: ccl.transfer copy 0 : i[0] -> 0 : o[0] count 3 step 0
// CHECK-NEXT: ccl.transfer copy 0 : i[0] -> 1 : s[0] count 2 step 0
// CHECK-NEXT: ccl.transfer copy 0 : i[2] -> 1 : o[2] step 0
// CHECK-NEXT: ccl.transfer copy 1 : s[0] -> 1 : o[0] count 2 step 1
// CHECK-NEXT: ccl.transfer copy 1 : s[0] -> 2 : o[0] count 2 step 1
// CHECK-NEXT: ccl.transfer copy 1 : o[2] -> 2 : o[2] step 1
// CHECK-NEXT: }
ccl.algorithm @bcast3 attributes {collective = "broadcast", ranks = 3,
    chunk_factor = 3, input_chunks = 3, output_chunks = 3,
    scratch_chunks = 3} {
  ccl.transfer copy 0:i[0] -> 0:o[0] count 3 step 0
  ccl.transfer copy 0:i[0] -> 1:s[2] step 0
  ccl.transfer copy 0:i[1] -> 1:s[0] step 0
  ccl.transfer copy 0:i[2] -> 1:o[2] step 0
  ccl.transfer copy 1:s[2] -> 1:o[0] step 1
  ccl.transfer copy 1:s[0] -> 1:o[1] step 1
  ccl.transfer copy 1:s[2] -> 2:o[0] step 1
  ccl.transfer copy 1:s[0] -> 2:o[1] step 1
  ccl.transfer copy 1:o[2] -> 2:o[2] step 1
}

// A bundle that drops one chunk per hop (a scatter along a chain): the
// chunk that leaves first is placed first, so what goes on stays
// contiguous, whatever scratch indices the schedule used.
// CHECK-LABEL: ccl.algorithm @shed
// CHECK-NEXT: ccl.transfer copy 0 : i[0] -> 0 : o[0] step 0
// CHECK-NEXT: ccl.transfer copy 0 : i[1] -> 1 : o[0] step 0
// CHECK-NEXT: ccl.transfer copy 0 : i[2] -> 1 : s[0] count 2 step 0
// CHECK-NEXT: ccl.transfer copy 1 : s[0] -> 2 : o[0] step 1
// CHECK-NEXT: ccl.transfer copy 1 : s[1] -> 2 : s[0] step 1
// CHECK-NEXT: ccl.transfer copy 2 : s[0] -> 3 : o[0] step 2
// CHECK-NEXT: }
ccl.algorithm @shed attributes {collective = "scatter", ranks = 4,
    input_chunks = 4, output_chunks = 1, scratch_chunks = 3} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 0:i[1] -> 1:o[0] step 0
  ccl.transfer copy 0:i[3] -> 1:s[0] step 0
  ccl.transfer copy 0:i[2] -> 1:s[1] step 0
  ccl.transfer copy 1:s[1] -> 2:o[0] step 1
  ccl.transfer copy 1:s[0] -> 2:s[2] step 1
  ccl.transfer copy 2:s[2] -> 3:o[0] step 2
}

// Nothing joins: the algorithm is left as it is.
// CHECK-LABEL: ccl.algorithm @ag2
// CHECK-NEXT: ccl.transfer copy 0 : i[0] -> 0 : o[0] step 0
// CHECK-NEXT: ccl.transfer copy 1 : i[0] -> 1 : o[1] step 0
// CHECK-NEXT: ccl.transfer copy 0 : i[0] -> 1 : o[0] step 0
// CHECK-NEXT: ccl.transfer copy 1 : i[0] -> 0 : o[1] step 0
ccl.algorithm @ag2 attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[0] -> 1:o[1] step 0
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0
  ccl.transfer copy 1:i[0] -> 0:o[1] step 0
}
