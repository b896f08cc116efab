// RUN: not ccsynth-opt %s --ccl-assign-threadblocks=max-local-steps=-1 2>&1 | FileCheck %s

// CHECK: error: ccl-assign-threadblocks: limits must be at least 1 (max-local-steps at least 0)
ccl.program @p attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2} {
  ccl.gpu 0 chunks(1, 2, 0) { ccl.copy i[0] -> o[0] }
  ccl.gpu 1 chunks(1, 2, 0) { ccl.copy i[0] -> o[1] }
}
