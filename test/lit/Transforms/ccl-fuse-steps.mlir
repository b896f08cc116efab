// RUN: ccsynth-opt %s --ccl-fuse-steps | FileCheck %s

// recv X ... send X  ->  recv_copy_send (the forward in one pass).
// CHECK-LABEL: ccl.program @rcs
// CHECK:      ccl.gpu 1 chunks(1, 3, 0) {
// CHECK-NEXT:   ccl.recv_copy_send from 0 -> o[0] to 2
// CHECK-NEXT: }
ccl.program @rcs attributes {collective = "allgather", ranks = 3,
    input_chunks = 1, output_chunks = 3} {
  ccl.gpu 0 chunks(1, 3, 0) { ccl.send i[0] to 1 }
  ccl.gpu 1 chunks(1, 3, 0) {
    ccl.recv from 0 -> o[0]
    ccl.send o[0] to 2 {step = 1}
  }
  ccl.gpu 2 chunks(1, 3, 0) { ccl.recv from 1 -> o[0] {step = 1} }
}

// A send in the same schedule step reads the old value: no fusion. A range
// overwritten before the send is not forwarded either.
// CHECK-LABEL: ccl.program @nofuse
// CHECK:      ccl.gpu 1 chunks(1, 3, 1) {
// CHECK-NEXT:   ccl.recv from 0 -> s[0]
// CHECK-NEXT:   ccl.send s[0] to 2
// CHECK-NEXT:   ccl.recv from 0 -> o[1]
// CHECK-NEXT:   ccl.copy i[0] -> o[1] {step = 1 : i64}
// CHECK-NEXT:   ccl.send o[1] to 2 {step = 2 : i64}
ccl.program @nofuse attributes {collective = "allgather", ranks = 3,
    input_chunks = 1, output_chunks = 3} {
  ccl.gpu 0 chunks(1, 3, 1) {
    ccl.send i[0] to 1
    ccl.send i[0] to 1 {order = 1}
  }
  ccl.gpu 1 chunks(1, 3, 1) {
    ccl.recv from 0 -> s[0]
    ccl.send s[0] to 2
    ccl.recv from 0 -> o[1] {order = 1}
    ccl.copy i[0] -> o[1] {step = 1}
    ccl.send o[1] to 2 {step = 2}
  }
  ccl.gpu 2 chunks(1, 3, 1) {
    ccl.recv from 1 -> o[0]
    ccl.recv from 1 -> o[1] {step = 2}
  }
}

// recv_reduce_copy into an output range, then a send of it -> rrcs; into a
// scratch range nobody reads afterwards -> rrs (the sum is not stored).
// CHECK-LABEL: ccl.program @reduce_send
// CHECK:      ccl.gpu 1 chunks(2, 2, 1) {
// CHECK-NEXT:   ccl.recv_reduce_copy_send from 0 with o[0] -> o[0] to 2
// CHECK-NEXT:   ccl.recv_reduce_send from 0 with s[0] to 2 {order = 1 : i64}
// CHECK-NEXT: }
ccl.program @reduce_send attributes {collective = "allreduce", ranks = 3,
    chunk_factor = 2, input_chunks = 2, output_chunks = 2} {
  ccl.gpu 0 chunks(2, 2, 1) {
    ccl.send o[0] to 1
    ccl.send o[1] to 1 {order = 1}
  }
  ccl.gpu 1 chunks(2, 2, 1) {
    ccl.recv_reduce_copy from 0 with o[0] -> o[0]
    ccl.recv_reduce_copy from 0 with s[0] -> s[0] {order = 1}
    ccl.send o[0] to 2 {step = 1}
    ccl.send s[0] to 2 {step = 1, order = 1}
  }
  ccl.gpu 2 chunks(2, 2, 1) {
    ccl.recv from 1 -> o[0] {step = 1}
    ccl.recv from 1 -> s[0] {step = 1, order = 1}
  }
}

// recv into scratch, then reduce of that scratch into Y -> rrc with Y -> Y.
// CHECK-LABEL: ccl.program @rrc
// CHECK:      ccl.gpu 1 chunks(1, 1, 1) {
// CHECK-NEXT:   ccl.recv_reduce_copy from 0 with o[0] -> o[0]
// CHECK-NEXT: }
ccl.program @rrc attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 1) { ccl.send i[0] to 1 }
  ccl.gpu 1 chunks(1, 1, 1) {
    ccl.recv from 0 -> s[0]
    ccl.reduce s[0] -> o[0] {step = 1}
  }
}

// The fused step moves after rank 1's own send to rank 2 (step 0), so the
// k-th send to rank 2 stays the k-th.
// CHECK-LABEL: ccl.program @moved
// CHECK:      ccl.gpu 1 chunks(1, 3, 0) {
// CHECK-NEXT:   ccl.copy i[0] -> o[1]
// CHECK-NEXT:   ccl.send i[0] to 2
// CHECK-NEXT:   ccl.recv_copy_send from 0 -> o[0] to 2
// CHECK-NEXT: }
ccl.program @moved attributes {collective = "allgather", ranks = 3,
    input_chunks = 1, output_chunks = 3} {
  ccl.gpu 0 chunks(1, 3, 0) { ccl.send i[0] to 1 }
  ccl.gpu 1 chunks(1, 3, 0) {
    ccl.recv from 0 -> o[0]
    ccl.copy i[0] -> o[1] {order = 1}
    ccl.send i[0] to 2 {order = 2}
    ccl.send o[0] to 2 {step = 1}
  }
  ccl.gpu 2 chunks(1, 3, 0) {
    ccl.recv from 1 -> o[1] {order = 2}
    ccl.recv from 1 -> o[0] {step = 1}
  }
}

// In place, i[0] is also the output: a partial sum left there is observed,
// so the reduction is stored (rrcs) unless a later step overwrites it
// (then rrs is fine).
// CHECK-LABEL: ccl.program @inplace
// CHECK:      ccl.gpu 1 chunks(2, 2, 0) {
// CHECK-NEXT:   ccl.recv_reduce_copy_send from 0 with i[0] -> i[0] to 2
// CHECK-NEXT:   ccl.recv_reduce_send from 0 with i[1] to 2 {order = 1 : i64}
// CHECK-NEXT:   ccl.recv from 2 -> i[1] {order = 2 : i64, step = 2 : i64}
ccl.program @inplace attributes {collective = "allreduce", ranks = 3,
    chunk_factor = 2, input_chunks = 2, output_chunks = 2, inplace} {
  ccl.gpu 0 chunks(2, 2, 0) {
    ccl.send i[0] to 1
    ccl.send i[1] to 1 {order = 1}
  }
  ccl.gpu 1 chunks(2, 2, 0) {
    ccl.recv_reduce_copy from 0 with i[0] -> i[0]
    ccl.recv_reduce_copy from 0 with i[1] -> i[1] {order = 1}
    ccl.send i[0] to 2 {step = 1}
    ccl.send i[1] to 2 {step = 1, order = 1}
    ccl.recv from 2 -> i[1] {step = 2, order = 2}
  }
  ccl.gpu 2 chunks(2, 2, 0) {
    ccl.recv from 1 -> i[0] {step = 1}
    ccl.recv from 1 -> i[1] {step = 1, order = 1}
    ccl.send i[1] to 1 {step = 2, order = 2}
  }
}

// A ring hop as schedules write it out of place: the message lands in the
// output, the rank adds its own input there, and forwards the sum. One
// rrc with i -> o, joined with the forward into one rrcs. Without
// forwarding fusions the rrc is made and the send stays its own step (on
// a threadblock of its own peer).
// RUN: ccsynth-opt %s --ccl-fuse-steps=forward=false | FileCheck %s --check-prefix=NOFWD
// CHECK-LABEL: ccl.program @ring_hop
// CHECK:      ccl.gpu 1 chunks(1, 1, 0) {
// CHECK-NEXT:   ccl.recv_reduce_copy_send from 0 with i[0] -> o[0] to 2
// CHECK-NEXT: }
// NOFWD-LABEL: ccl.program @ring_hop
// NOFWD:      ccl.gpu 1 chunks(1, 1, 0) {
// NOFWD-NEXT:   ccl.recv_reduce_copy from 0 with i[0] -> o[0]
// NOFWD-NEXT:   ccl.send o[0] to 2 {step = 2 : i64}
// NOFWD-NEXT: }
// NOFWD-NOT: recv_copy_send
// NOFWD-NOT: recv_reduce_copy_send
// NOFWD-NOT: recv_reduce_send
ccl.program @ring_hop attributes {collective = "allreduce", ranks = 3,
    input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) { ccl.send i[0] to 1 }
  ccl.gpu 1 chunks(1, 1, 0) {
    ccl.recv from 0 -> o[0]
    ccl.reduce i[0] -> o[0] {step = 1}
    ccl.send o[0] to 2 {step = 2}
  }
  ccl.gpu 2 chunks(1, 1, 0) { ccl.recv from 1 -> o[0] {step = 2} }
}

// The local operand changes between the receive and the reduction, so the
// reduction cannot move to the receive: it stays separate (as in a tree,
// where a rank's own partial sum is still being formed).
// CHECK-LABEL: ccl.program @reduce_stays
// CHECK:      ccl.gpu 1 chunks(1, 1, 1) {
// CHECK-NEXT:   ccl.recv from 0 -> o[0]
// CHECK-NEXT:   ccl.recv_reduce_copy from 2 with s[0] -> s[0]
// CHECK-NEXT:   ccl.reduce s[0] -> o[0] {step = 2 : i64}
ccl.program @reduce_stays attributes {collective = "allreduce", ranks = 3,
    input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 1) { ccl.send i[0] to 1 }
  ccl.gpu 1 chunks(1, 1, 1) {
    ccl.recv from 0 -> o[0]
    ccl.recv_reduce_copy from 2 with s[0] -> s[0] {step = 1}
    ccl.reduce s[0] -> o[0] {step = 2}
  }
  ccl.gpu 2 chunks(1, 1, 1) { ccl.send i[0] to 1 {step = 1} }
}

// A hop that receives two chunks before it forwards the first: the sends
// of its own chunks to the same peer move ahead of the receives (send
// first), so that each receive fuses with its forward and the k-th send
// to the peer stays the k-th. Without send-first the receives stay apart.
// RUN: ccsynth-opt %s --ccl-fuse-steps=send-first=false | FileCheck %s --check-prefix=NOSF
// CHECK-LABEL: ccl.program @send_first
// CHECK:      ccl.gpu 1 chunks(2, 6, 0) {
// CHECK-NEXT:   ccl.send i[0] to 2
// CHECK-NEXT:   ccl.send i[1] to 2 {order = 3 : i64}
// CHECK-NEXT:   ccl.recv_copy_send from 0 -> o[0] to 2
// CHECK-NEXT:   ccl.recv_copy_send from 0 -> o[1] to 2 {order = 1 : i64}
// CHECK-NEXT: }
// NOSF-LABEL: ccl.program @send_first
// NOSF:      ccl.gpu 1 chunks(2, 6, 0) {
// NOSF-NEXT:   ccl.recv from 0 -> o[0]
// NOSF-NEXT:   ccl.send i[0] to 2
ccl.program @send_first attributes {collective = "allgather", ranks = 3,
    chunk_factor = 2, input_chunks = 2, output_chunks = 6} {
  ccl.gpu 0 chunks(2, 6, 0) {
    ccl.send i[0] to 1
    ccl.send i[1] to 1 {order = 1}
  }
  ccl.gpu 1 chunks(2, 6, 0) {
    ccl.recv from 0 -> o[0]
    ccl.send i[0] to 2 {order = 2}
    ccl.recv from 0 -> o[1] {order = 1}
    ccl.send i[1] to 2 {order = 3}
    ccl.send o[0] to 2 {step = 1}
    ccl.send o[1] to 2 {step = 1, order = 1}
  }
  ccl.gpu 2 chunks(2, 6, 0) {
    ccl.recv from 1 -> o[2]
    ccl.recv from 1 -> o[3] {order = 1}
    ccl.recv from 1 -> o[0] {step = 1}
    ccl.recv from 1 -> o[1] {step = 1, order = 1}
  }
}
