// RUN: ccsynth-opt %s | ccsynth-opt | FileCheck %s
// RUN: ccsynth-opt %s --mlir-print-op-generic | ccsynth-opt | FileCheck %s

// Chunk level: every transfer form, hints, and the metadata.
// CHECK-LABEL: ccl.algorithm @ag2
// CHECK-SAME: collective = "allgather"
// CHECK-SAME: max_bytes = 1048576
// CHECK-SAME: protocol = "LL128"
ccl.algorithm @ag2 attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2, protocol = "LL128",
    min_bytes = 1024, max_bytes = 1048576, topology = "ring:2"} {
  // CHECK: ccl.transfer copy 0 : i[0] -> 0 : o[0] step 0
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  // CHECK: ccl.transfer copy 0 : i[0] -> 1 : o[0] step 0 {channel = 1 : i64, link = 3 : i64}
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0 {link = 3, channel = 1}
  // CHECK: ccl.transfer copy 1 : i[0] -> 1 : o[1] step 0
  ccl.transfer copy 1:i[0] -> 1:o[1] step 0
  // CHECK: ccl.transfer copy 1 : i[0] -> 0 : o[1] step 1 {threadblock = 0 : i64}
  ccl.transfer copy 1:i[0] -> 0:o[1] step 1 {threadblock = 0}
}

// CHECK-LABEL: ccl.algorithm @ar2
// CHECK-SAME: inplace
ccl.algorithm @ar2 attributes {collective = "allreduce", ranks = 2,
    chunk_factor = 2, input_chunks = 2, output_chunks = 2, inplace,
    scratch_chunks = 2} {
  // CHECK: ccl.transfer copy 0 : i[0] -> 1 : s[0] count 2 step 0
  ccl.transfer copy 0:i[0] -> 1:s[0] count 2 step 0
  // CHECK: ccl.transfer reduce 1 : s[0] -> 1 : i[0] count 2 step 1
  ccl.transfer reduce 1:s[0] -> 1:i[0] count 2 step 1
}

// A custom collective: rank 1 must end with rank 0's value.
// CHECK-LABEL: ccl.algorithm @shift
// CHECK-SAME: collective = "custom"
// CHECK-SAME: postcondition = {{\[}}[unit], [array<i64: 0>]]
ccl.algorithm @shift attributes {collective = "custom",
    collective_name = "shift", ranks = 2, input_chunks = 1,
    output_chunks = 1, precondition = [array<i64: 0>, array<i64: -1>],
    postcondition = [[unit], [array<i64: 0>]]} {
  // CHECK: ccl.transfer copy 0 : i[0] -> 1 : o[0] step 0
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0
}

// Step level before threadblock assignment.
// CHECK-LABEL: ccl.program @unassigned
// CHECK: ccl.gpu 0 chunks(1, 2, 0) {
// CHECK-NEXT: ccl.copy i[0] -> o[0]
// CHECK-NEXT: ccl.send i[0] to 1 {order = 1 : i64}
// CHECK: ccl.gpu 1 chunks(1, 2, 0) {
// CHECK-NEXT: ccl.recv from 0 -> o[0] {order = 1 : i64}
ccl.program @unassigned attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.gpu 0 chunks(1, 2, 0) {
    ccl.copy i[0] -> o[0]
    ccl.send i[0] to 1 {order = 1}
    ccl.recv from 1 -> o[1] {order = 3}
  }
  ccl.gpu 1 chunks(1, 2, 0) {
    ccl.recv from 0 -> o[0] {order = 1}
    ccl.copy i[0] -> o[1] {order = 2}
    ccl.send i[0] to 0 {order = 3}
  }
}

// Step level after assignment: every step op, counts and dependencies.
// CHECK-LABEL: ccl.program @steps
// CHECK: ccl.threadblock 0 send 1 recv 2 channel 0 {
// CHECK-NEXT: ccl.send i[0] to 1 count 2
// CHECK-NEXT: ccl.recv from 2 -> o[0]
// CHECK-NEXT: ccl.recv_copy_send from 2 -> o[1] to 1
// CHECK-NEXT: ccl.recv_reduce_copy from 2 with s[0] -> o[2] after [1:0]
// CHECK-NEXT: ccl.recv_reduce_send from 2 with s[1] to 1
// CHECK-NEXT: ccl.recv_reduce_copy_send from 2 with o[3] -> o[3] to 1 after [1:0, 1:1]
// CHECK: ccl.threadblock 1 send -1 recv -1 channel 3 {
// CHECK-NEXT: ccl.copy i[0] -> s[0]
// CHECK-NEXT: ccl.reduce i[1] -> s[1]
ccl.program @steps attributes {collective = "allgather", ranks = 3,
    chunk_factor = 2, input_chunks = 2, output_chunks = 6} {
  ccl.gpu 0 chunks(2, 6, 2) {
    ccl.threadblock 0 send 1 recv 2 channel 0 {
      ccl.send i[0] to 1 count 2
      ccl.recv from 2 -> o[0]
      ccl.recv_copy_send from 2 -> o[1] to 1
      ccl.recv_reduce_copy from 2 with s[0] -> o[2] after [1:0]
      ccl.recv_reduce_send from 2 with s[1] to 1
      ccl.recv_reduce_copy_send from 2 with o[3] -> o[3] to 1 after [1:0, 1:1]
    }
    ccl.threadblock 1 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[0]
      ccl.reduce i[1] -> s[1]
    }
  }
  ccl.gpu 1 chunks(2, 6, 0) {}
  ccl.gpu 2 chunks(2, 6, 0) {}
}
