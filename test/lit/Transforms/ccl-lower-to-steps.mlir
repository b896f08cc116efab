// RUN: ccsynth-opt %s --ccl-lower-to-steps=max-count=2 | FileCheck %s

// Remote copies become send/recv, remote reductions send/recv_reduce_copy,
// local transfers copy/reduce; steps are listed per rank in (step, order)
// order; a 3-chunk transfer splits into 2 + 1 chunks; channel hints ride
// along as ccl.channel.

// CHECK-LABEL: ccl.program @ar2
// CHECK-SAME: collective = "allreduce"
// CHECK-NOT: scratch_chunks
// CHECK:      ccl.gpu 0 chunks(3, 3, 3) {
// CHECK-NEXT:   ccl.send i[0] to 1 count 2 {ccl.channel = 1 : i64}
// CHECK-NEXT:   ccl.send i[2] to 1 {ccl.channel = 1 : i64, order = 1 : i64}
// CHECK-NEXT:   ccl.recv from 1 -> i[0] count 2 {order = 3 : i64, step = 2 : i64}
// CHECK-NEXT:   ccl.recv from 1 -> i[2] {order = 4 : i64, step = 2 : i64}
// CHECK-NEXT: }
// CHECK-NEXT: ccl.gpu 1 chunks(3, 3, 3) {
// CHECK-NEXT:   ccl.recv from 0 -> s[0] count 2 {ccl.channel = 1 : i64}
// CHECK-NEXT:   ccl.recv from 0 -> s[2] {ccl.channel = 1 : i64, order = 1 : i64}
// CHECK-NEXT:   ccl.reduce s[0] -> i[0] count 2 {order = 2 : i64, step = 1 : i64}
// CHECK-NEXT:   ccl.send i[0] to 0 count 2 {order = 3 : i64, step = 2 : i64}
// CHECK-NEXT:   ccl.send i[2] to 0 {order = 4 : i64, step = 2 : i64}
// CHECK-NEXT: }
ccl.algorithm @ar2 attributes {collective = "allreduce", ranks = 2,
    chunk_factor = 3, input_chunks = 3, output_chunks = 3, inplace,
    scratch_chunks = 3} {
  ccl.transfer copy 1:i[0] -> 0:i[0] count 3 step 2
  ccl.transfer copy 0:i[0] -> 1:s[0] count 3 step 0 {channel = 1}
  ccl.transfer reduce 1:s[0] -> 1:i[0] count 2 step 1
}

// A remote reduction reduces into its destination in place.
// CHECK-LABEL: ccl.program @rs2
// CHECK: ccl.gpu 0 chunks(2, 1, 0) {
// CHECK-NEXT: ccl.copy i[0] -> o[0]
// CHECK-NEXT: ccl.recv_reduce_copy from 1 with o[0] -> o[0] {order = 2 : i64, step = 1 : i64}
// CHECK-NEXT: ccl.send i[1] to 1 {order = 3 : i64, step = 1 : i64}
ccl.algorithm @rs2 attributes {collective = "reducescatter", ranks = 2,
    input_chunks = 2, output_chunks = 1} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[1] -> 1:o[0] step 0
  ccl.transfer reduce 1:i[0] -> 0:o[0] step 1
  ccl.transfer reduce 0:i[1] -> 1:o[0] step 1
}
