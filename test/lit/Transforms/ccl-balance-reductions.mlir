// RUN: ccsynth-opt %s -split-input-file --ccl-balance-reductions | FileCheck %s
// RUN: ccsynth-opt %s -split-input-file --ccl-balance-reductions --ccl-assign-threadblocks=local-tbs=4 | FileCheck %s --check-prefix=TBS

// Rank 0 gathers three contributions to its chunk in scratch, then adds
// them one by one: the chain becomes a tree over [o[0], s[0], s[1], s[2]]
// that takes the place of the last reduce. Its first level writes o[0] and
// s[1], so with local-tbs they run on threadblocks of their own.
// CHECK-LABEL: ccl.program @direct
// CHECK:      ccl.gpu 0 chunks(4, 1, 3) {
// CHECK-NEXT:   ccl.recv from 1 -> s[0]
// CHECK-NEXT:   ccl.recv from 2 -> s[1]
// CHECK-NEXT:   ccl.recv from 3 -> s[2]
// CHECK-NEXT:   ccl.copy i[0] -> o[0]
// CHECK-NEXT:   ccl.reduce s[0] -> o[0]
// CHECK-NEXT:   ccl.reduce s[2] -> s[1]
// CHECK-NEXT:   ccl.reduce s[1] -> o[0]
// CHECK-NEXT: {{^ *}}}
// TBS-LABEL: ccl.program @direct
// TBS:        ccl.threadblock 3 send -1 recv -1 channel 0 {
// TBS-NEXT:     ccl.copy i[0] -> o[0]
// TBS-NEXT:     ccl.reduce s[0] -> o[0]
// TBS-NEXT:     ccl.reduce s[1] -> o[0]
// TBS-NEXT: {{^ *}}}
// TBS-NEXT:   ccl.threadblock 4 send -1 recv -1 channel 0 {
// TBS-NEXT:     ccl.reduce s[2] -> s[1]
ccl.program @direct attributes {collective = "reducescatter", ranks = 4,
    input_chunks = 4, output_chunks = 1} {
  ccl.gpu 0 chunks(4, 1, 3) {
    ccl.recv from 1 -> s[0] {order = 0}
    ccl.recv from 2 -> s[1] {order = 1}
    ccl.recv from 3 -> s[2] {order = 2}
    ccl.copy i[0] -> o[0] {step = 1, order = 3}
    ccl.reduce s[0] -> o[0] {step = 1, order = 4}
    ccl.reduce s[1] -> o[0] {step = 1, order = 5}
    ccl.reduce s[2] -> o[0] {step = 1, order = 6}
  }
  ccl.gpu 1 chunks(4, 1, 0) {
    ccl.send i[0] to 0 {order = 0}
  }
  ccl.gpu 2 chunks(4, 1, 0) {
    ccl.send i[0] to 0 {order = 1}
  }
  ccl.gpu 3 chunks(4, 1, 0) {
    ccl.send i[0] to 0 {order = 2}
  }
}

// -----

// Left alone: a source read after the chain (s[1] is sent on), a chain of
// two, and a chain that something else reads in between.
// CHECK-LABEL: ccl.program @kept
// CHECK:      ccl.gpu 0 chunks(4, 2, 6) {
// CHECK:        ccl.reduce s[0] -> o[0]
// CHECK-NEXT:   ccl.reduce s[1] -> o[0]
// CHECK-NEXT:   ccl.reduce s[2] -> o[0]
// CHECK-NEXT:   ccl.send s[1] to 1
// CHECK-NEXT:   ccl.reduce s[3] -> o[1]
// CHECK-NEXT:   ccl.send o[1] to 1
// CHECK-NEXT:   ccl.reduce s[4] -> o[1]
// CHECK-NEXT:   ccl.reduce s[5] -> o[1]
// CHECK-NEXT: {{^ *}}}
ccl.program @kept attributes {collective = "reducescatter", ranks = 2, chunk_factor = 2,
    input_chunks = 4, output_chunks = 2} {
  ccl.gpu 0 chunks(4, 2, 6) {
    ccl.recv from 1 -> s[0] {order = 0}
    ccl.recv from 1 -> s[1] {order = 1}
    ccl.recv from 1 -> s[2] {order = 2}
    ccl.recv from 1 -> s[3] {order = 3}
    ccl.recv from 1 -> s[4] {order = 4}
    ccl.recv from 1 -> s[5] {order = 5}
    ccl.reduce s[0] -> o[0] {step = 1, order = 6}
    ccl.reduce s[1] -> o[0] {step = 1, order = 7}
    ccl.reduce s[2] -> o[0] {step = 1, order = 8}
    ccl.send s[1] to 1 {step = 2, order = 9}
    ccl.reduce s[3] -> o[1] {step = 2, order = 10}
    ccl.send o[1] to 1 {step = 2, order = 11}
    ccl.reduce s[4] -> o[1] {step = 2, order = 12}
    ccl.reduce s[5] -> o[1] {step = 2, order = 13}
  }
  ccl.gpu 1 chunks(4, 2, 0) {
    ccl.send i[0] to 0 {order = 0}
    ccl.send i[1] to 0 {order = 1}
    ccl.send i[2] to 0 {order = 2}
    ccl.send i[3] to 0 {order = 3}
    ccl.send i[0] to 0 {order = 4}
    ccl.send i[1] to 0 {order = 5}
    ccl.recv from 0 -> o[0] {step = 2, order = 9}
    ccl.recv from 0 -> o[1] {step = 2, order = 11}
  }
}
