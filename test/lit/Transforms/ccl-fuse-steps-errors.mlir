// RUN: ccsynth-opt %s -split-input-file --ccl-fuse-steps -verify-diagnostics

// Fusion relies on in-order pairing, so unpaired steps are rejected.
ccl.program @p attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.gpu 0 chunks(1, 2, 0) {
    // expected-error @+1 {{rank 0 sends 1 message(s) to rank 1 but rank 1 receives 0; this step has no partner}}
    ccl.send i[0] to 1
  }
  ccl.gpu 1 chunks(1, 2, 0) {}
}

// -----

ccl.program @p attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.gpu 0 chunks(1, 2, 0) {
    // expected-error @+1 {{message 0 from rank 0 to rank 1 sends 1 chunk(s) but the matching receive takes 2}}
    ccl.send i[0] to 1
  }
  ccl.gpu 1 chunks(1, 2, 0) {
    ccl.recv from 0 -> o[0] count 2
  }
}
