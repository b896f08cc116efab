// RUN: ccsynth-opt %s -split-input-file --ccl-pipeline-chunks=parts=0 -verify-diagnostics
// RUN: not ccsynth-opt %s -split-input-file --ccl-pipeline-chunks=parts=64 2>&1 | FileCheck %s

// expected-error @+1 {{ccl-pipeline-chunks: parts must be at least 1 (got 0)}}
ccl.algorithm @a attributes {collective = "allreduce", ranks = 1,
    input_chunks = 1, output_chunks = 1} {
}

// -----

// CHECK: error: ccl-pipeline-chunks: refining allreduce(ranks=1, chunks=1048576) by 64 makes buffers too large
// expected-error @+1 {{ccl-pipeline-chunks: parts must be at least 1 (got 0)}}
ccl.algorithm @huge attributes {collective = "allreduce", ranks = 1,
    chunk_factor = 1048576, input_chunks = 1048576, output_chunks = 1048576} {
}
