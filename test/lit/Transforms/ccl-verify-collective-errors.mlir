// RUN: ccsynth-opt %s -split-input-file --ccl-verify-collective -verify-diagnostics

// An output chunk nobody writes is reported at the algorithm.
// expected-error @+1 {{[missing-output] rank 0 output chunk 1 is never written; expected in[1][0]}}
ccl.algorithm @a attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[0] -> 1:o[1] step 0
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0
}

// -----

// Reading a chunk in the step that writes it is a race.
ccl.algorithm @a attributes {collective = "allgather", ranks = 3,
    input_chunks = 1, output_chunks = 3} {
  ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  ccl.transfer copy 1:i[0] -> 1:o[1] step 0
  ccl.transfer copy 2:i[0] -> 2:o[2] step 0
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0
  ccl.transfer copy 1:i[0] -> 2:o[1] step 0
  ccl.transfer copy 2:i[0] -> 0:o[2] step 0
  // expected-error @+1 {{[read-write-race] transfer #6 (step 0): reads rank 1 output chunk 0 while transfer #3 writes it in the same step}}
  ccl.transfer copy 1:o[0] -> 2:o[0] step 0
  ccl.transfer copy 2:o[1] -> 0:o[1] step 1
  ccl.transfer copy 0:o[2] -> 1:o[2] step 1
}

// -----

// Counting a contribution twice.
ccl.algorithm @a attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1, inplace} {
  ccl.transfer reduce 0:i[0] -> 1:i[0] step 0
  // expected-error @+1 {{[duplicate-reduction]}}
  ccl.transfer reduce 0:i[0] -> 1:i[0] step 1
  ccl.transfer copy 1:i[0] -> 0:i[0] step 2
}

// -----

// A switch reduction without rank 1's contribution leaves the sum short.
// expected-error @+1 {{[wrong-output]}}
ccl.algorithm @a attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1} {
  ccl.transfer switch_reduce 0:i[0] -> 0:o[0] step 0 through 0
  ccl.transfer multicast 0:o[0] -> 1:o[0] step 1 through 0
}
