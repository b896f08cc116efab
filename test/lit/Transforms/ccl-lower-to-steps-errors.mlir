// RUN: ccsynth-opt %s --ccl-lower-to-steps=max-count=0 -verify-diagnostics

// expected-error @below {{ccl-lower-to-steps: max-count must be at least 1}}
module {
  ccl.algorithm @a attributes {collective = "allreduce", ranks = 1,
      input_chunks = 1, output_chunks = 1} {
  }
}
