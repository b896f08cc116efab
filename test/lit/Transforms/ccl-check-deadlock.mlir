// RUN: ccsynth-opt %s --ccl-check-deadlock | FileCheck %s

// A 2-rank exchange where one side receives first and the other sends
// first is fine (sends are buffered), as are dependencies that point
// forward. The pass leaves the program unchanged.

// CHECK-LABEL: ccl.program @ok
// CHECK: ccl.recv from 1 -> o[1]
// CHECK: ccl.send i[0] to 1 after [1:0]
ccl.program @ok attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.gpu 0 chunks(1, 2, 0) {
    ccl.threadblock 0 send 1 recv 1 channel 0 {
      ccl.recv from 1 -> o[1]
      ccl.send i[0] to 1 after [1:0]
    }
    ccl.threadblock 1 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> o[0]
    }
  }
  ccl.gpu 1 chunks(1, 2, 0) {
    ccl.threadblock 0 send 0 recv 0 channel 0 {
      ccl.send i[0] to 0
      ccl.recv from 0 -> o[0]
    }
    ccl.threadblock 1 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> o[1]
    }
  }
}
