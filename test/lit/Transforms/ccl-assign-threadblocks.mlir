// RUN: ccsynth-opt %s -split-input-file --ccl-assign-threadblocks | FileCheck %s
// RUN: ccsynth-opt %s -split-input-file --ccl-assign-threadblocks=max-steps=2 --ccl-check-deadlock | FileCheck %s --check-prefix=SPLIT
// RUN: ccsynth-opt %s -split-input-file --ccl-assign-threadblocks=max-local-steps=1 --ccl-check-deadlock | FileCheck %s --check-prefix=LOCAL

// A 3-rank ring: each rank's sends to its successor and receives from its
// predecessor share one threadblock (the fused steps need both peers);
// local copies get a peerless threadblock; every threadblock runs its steps
// in schedule order.
// CHECK-LABEL: ccl.program @ring3
// CHECK:      ccl.gpu 0 chunks(1, 3, 0) {
// CHECK-NEXT:   ccl.threadblock 0 send 1 recv 2 channel 0 {
// CHECK-NEXT:     ccl.send i[0] to 1
// CHECK-NEXT:     ccl.recv_copy_send from 2 -> o[2] to 1
// CHECK-NEXT:     ccl.recv from 2 -> o[1]
// CHECK:        ccl.threadblock 1 send -1 recv -1 channel 0 {
// CHECK-NEXT:     ccl.copy i[0] -> o[0]
// With at most two steps per threadblock, groups of messages that do not
// fit move to channel 1 (at both ends), and the result still checks.
// SPLIT-LABEL: ccl.program @ring3
// SPLIT:      ccl.gpu 0 chunks(1, 3, 0) {
// SPLIT-NEXT:   ccl.threadblock 0 send 1 recv 2 channel 0 {
// SPLIT-NEXT:     ccl.send i[0] to 1
// SPLIT-NEXT:     ccl.recv from 2 -> o[1]
// SPLIT:        ccl.threadblock 1 send -1 recv -1 channel 0 {
// SPLIT-NEXT:     ccl.copy i[0] -> o[0]
// SPLIT:        ccl.threadblock 2 send 1 recv 2 channel 1 {
// SPLIT-NEXT:     ccl.recv_copy_send from 2 -> o[2] to 1
// SPLIT:      ccl.gpu 2 chunks(1, 3, 0) {
// SPLIT:        ccl.threadblock 2 send 0 recv 1 channel 1 {
// SPLIT-NEXT:     ccl.send i[0] to 0
ccl.program @ring3 attributes {collective = "allgather", ranks = 3,
    input_chunks = 1, output_chunks = 3} {
  ccl.gpu 0 chunks(1, 3, 0) {
    ccl.copy i[0] -> o[0]
    ccl.send i[0] to 1 {order = 1}
    ccl.recv_copy_send from 2 -> o[2] to 1 {order = 5}
    ccl.recv from 2 -> o[1] {step = 1, order = 7}
  }
  ccl.gpu 1 chunks(1, 3, 0) {
    ccl.recv_copy_send from 0 -> o[0] to 2 {order = 1}
    ccl.copy i[0] -> o[1] {order = 2}
    ccl.send i[0] to 2 {order = 3}
    ccl.recv from 0 -> o[2] {step = 1, order = 8}
  }
  ccl.gpu 2 chunks(1, 3, 0) {
    ccl.recv from 1 -> o[1] {order = 3}
    ccl.copy i[0] -> o[2] {order = 4}
    ccl.send i[0] to 0 {order = 5}
    ccl.recv_copy_send from 1 -> o[0] to 0 {step = 1, order = 6}
  }
}

// -----

// Cross-threadblock dependencies: the send of o[0] waits for the local
// copy that writes it (read after write, tb 1 step 0); the later copy into
// o[1] waits for the send that reads o[1] first (write after read, tb 0
// step 1).
// CHECK-LABEL: ccl.program @deps
// CHECK:      ccl.threadblock 0 send 1 recv -1 channel 0 {
// CHECK-NEXT:   ccl.send o[0] to 1 after [1:0]
// CHECK-NEXT:   ccl.send o[1] to 1
// CHECK:      ccl.threadblock 1 send -1 recv -1 channel 0 {
// CHECK-NEXT:   ccl.copy i[0] -> o[0]
// CHECK-NEXT:   ccl.copy o[0] -> o[1] after [0:1]
// SPLIT-LABEL: ccl.program @deps
// With one local step per threadblock the two copies part, and the second
// also waits for the first (read after write, tb 1 step 0).
// LOCAL-LABEL: ccl.program @deps
// LOCAL:      ccl.threadblock 1 send -1 recv -1 channel 0 {
// LOCAL-NEXT:   ccl.copy i[0] -> o[0]
// LOCAL-NEXT: }
// LOCAL-NEXT: ccl.threadblock 2 send -1 recv -1 channel 0 {
// LOCAL-NEXT:   ccl.copy o[0] -> o[1] after [0:1, 1:0]
ccl.program @deps attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.gpu 0 chunks(1, 2, 0) {
    ccl.copy i[0] -> o[0]
    ccl.send o[0] to 1 {step = 1}
    ccl.send o[1] to 1 {step = 1, order = 1}
    ccl.copy o[0] -> o[1] {step = 2}
  }
  ccl.gpu 1 chunks(1, 2, 0) {
    ccl.recv from 0 -> o[0] {step = 1}
    ccl.recv from 0 -> o[1] {step = 1, order = 1}
  }
}
