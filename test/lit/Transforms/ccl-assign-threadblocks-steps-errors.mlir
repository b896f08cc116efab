// RUN: ccsynth-opt %s --ccl-assign-threadblocks=max-steps=1 -verify-diagnostics

// The send waits for two local threadblocks; in MSCCL that costs a nop
// plus the step itself, more than one step per threadblock allows.
// expected-error @+1 {{threadblock 0 of rank 0 needs 2 steps with its dependencies, more than max-steps (1)}}
ccl.program @p attributes {collective = "allreduce", ranks = 2,
    chunk_factor = 2, input_chunks = 2, output_chunks = 2} {
  ccl.gpu 0 chunks(2, 2, 0) {
    ccl.copy i[0] -> o[0]
    ccl.copy i[1] -> o[1] {order = 1}
    ccl.send o[0] to 1 count 2 {step = 1}
  }
  ccl.gpu 1 chunks(2, 2, 0) { ccl.recv from 0 -> o[0] count 2 {step = 1} }
}
