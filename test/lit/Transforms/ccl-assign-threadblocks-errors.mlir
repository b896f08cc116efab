// RUN: ccsynth-opt %s -split-input-file --ccl-assign-threadblocks="max-channels=1 max-tbs-per-channel=1" -verify-diagnostics

// Two send peers need two threadblocks; one channel with one threadblock
// cannot hold them.
ccl.program @p attributes {collective = "allgather", ranks = 3,
    input_chunks = 1, output_chunks = 3} {
  ccl.gpu 0 chunks(1, 3, 0) {
    ccl.send i[0] to 1
    // expected-error @+1 {{cannot place this step: no channel below max-channels (1) has room within 64 steps per threadblock and 1 threadblocks per channel}}
    ccl.send i[0] to 2 {order = 1}
  }
  ccl.gpu 1 chunks(1, 3, 0) { ccl.recv from 0 -> o[0] }
  ccl.gpu 2 chunks(1, 3, 0) { ccl.recv from 0 -> o[0] {order = 1} }
}

// -----

ccl.program @p attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.gpu 0 chunks(1, 2, 0) {
    ccl.send i[0] to 1
    // expected-error @+1 {{cannot place this local step: every channel has max-tbs-per-channel (1) threadblocks}}
    ccl.copy i[0] -> o[0]
  }
  ccl.gpu 1 chunks(1, 2, 0) { ccl.recv from 0 -> o[0] }
}

// -----

ccl.program @p attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.gpu 0 chunks(1, 2, 0) {
    ccl.send i[0] to 1
  }
  ccl.gpu 1 chunks(1, 2, 0) {
    ccl.recv from 0 -> o[0]
    // expected-error @+1 {{rank 0 sends 1 message(s) to rank 1 but rank 1 receives 2; this step has no partner}}
    ccl.recv from 0 -> o[1] {order = 1}
  }
}
