// RUN: ccsynth-opt %s -split-input-file --ccl-check-deadlock | FileCheck %s
// The same programs with Simple: fine with unbounded buffers, a deadlock
// with MSCCL's.
// RUN: sed 's/protocol = "LL"/protocol = "Simple"/' %s | ccsynth-opt -split-input-file '--ccl-check-deadlock=bounded-buffers=false' | FileCheck %s --check-prefix=UNBOUNDED
// RUN: sed 's/protocol = "LL"/protocol = "Simple"/' %s | not ccsynth-opt -split-input-file --ccl-check-deadlock 2>&1 | FileCheck %s --check-prefix=BOUNDED

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

// -----

// Three sends ahead of the receives: LL takes one of the 8 slots per
// chunk, so this is safe with LL (and with unbounded buffers), not with
// Simple (ccl-check-deadlock-errors.mlir).
// CHECK-LABEL: ccl.program @ll
// UNBOUNDED-LABEL: ccl.program @ll
// BOUNDED: error: deadlock: rank 0 tb 0 step 2 (s to 1) waits for rank 1 tb 0 step 3 (r from 0) [room in the connection's buffer]
ccl.program @ll attributes {collective = "allreduce", ranks = 2,
    chunk_factor = 3, input_chunks = 3, output_chunks = 3,
    protocol = "LL"} {
  ccl.gpu 0 chunks(3, 3, 0) {
    ccl.threadblock 0 send 1 recv 1 channel 0 {
      ccl.send i[0] to 1
      ccl.send i[1] to 1
      ccl.send i[2] to 1
      ccl.recv from 1 -> o[0]
      ccl.recv from 1 -> o[1]
      ccl.recv from 1 -> o[2]
    }
  }
  ccl.gpu 1 chunks(3, 3, 0) {
    ccl.threadblock 0 send 0 recv 0 channel 0 {
      ccl.send i[0] to 0
      ccl.send i[1] to 0
      ccl.send i[2] to 0
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[1]
      ccl.recv from 0 -> o[2]
    }
  }
}
