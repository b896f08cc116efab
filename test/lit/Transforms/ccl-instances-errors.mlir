// RUN: ccsynth-opt %s -split-input-file --ccl-instances=count=0 -verify-diagnostics
// RUN: not ccsynth-opt %s -split-input-file --ccl-instances=count=32 2>&1 | FileCheck %s

// expected-error @+1 {{ccl-instances: count must be at least 1 (got 0)}}
ccl.algorithm @a attributes {collective = "allreduce", ranks = 1,
    input_chunks = 1, output_chunks = 1} {
}

// -----

// 2^20 chunks times 32 instances exceeds the 2^24-chunk buffer limit.
// CHECK: error: ccl-instances: refining allreduce(ranks=1, chunks=1048576) by 32 makes buffers too large
// expected-error @+1 {{ccl-instances: count must be at least 1 (got 0)}}
ccl.algorithm @huge attributes {collective = "allreduce", ranks = 1,
    chunk_factor = 1048576, input_chunks = 1048576, output_chunks = 1048576} {
}
