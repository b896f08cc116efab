// RUN: ccsynth-translate %s -split-input-file --ccl-to-msccl-xml -verify-diagnostics

// The exporter writes nothing for programs the MSCCL runtime would reject.

// expected-error @+1 {{no ccl.program to export (the input holds a chunk-level ccl.algorithm; run the default pipeline first)}}
module {
  ccl.algorithm @a attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {}
}

// -----

// expected-error @+1 {{the program's steps are not assigned to threadblocks yet (run ccl-assign-threadblocks)}}
ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) { ccl.copy i[0] -> o[0] }
}

// -----

// expected-error @+1 {{MSCCL has no 'coll' for the custom collective 'shift': name the NCCL call that launches it with --msccl-coll (these fit its buffers: reduce, broadcast, allreduce, reducescatter, allgather, alltoall)}}
ccl.program @p attributes {collective = "custom", collective_name = "shift",
    ranks = 1, input_chunks = 1, output_chunks = 1,
    precondition = [array<i64: 0>], postcondition = [[array<i64: 0>]]} {
  ccl.gpu 0 chunks(1, 1, 0) {}
}

// -----

// expected-error @+1 {{gpu 0 tb 0: 65 steps exceed the runtime's limit of 64}}
ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
      ccl.copy i[0] -> o[0]
    }
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, chunk_factor = 72, input_chunks = 72, output_chunks = 72} {
  ccl.gpu 0 chunks(72, 72, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {
      // expected-error @+1 {{gpu 0 tb 0 step 0: cnt 72 must be in 1..71}}
      ccl.copy i[0] -> o[0] count 72
    }
  }
}

// -----

// expected-error @+1 {{gpu 0: more than 32 threadblocks on channel 0}}
ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 1 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 2 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 3 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 4 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 5 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 6 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 7 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 8 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 9 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 10 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 11 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 12 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 13 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 14 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 15 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 16 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 17 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 18 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 19 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 20 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 21 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 22 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 23 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 24 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 25 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 26 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 27 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 28 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 29 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 30 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 31 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
    ccl.threadblock 32 send -1 recv -1 channel 0 { ccl.copy i[0] -> o[0] }
  }
}

// -----

// expected-error @+1 {{algo: nchannels 33 must be in 1..32}}
ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 32 { ccl.copy i[0] -> o[0] }
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send 1 recv -1 channel 0 {
      // expected-error @+1 {{rank 0 sends 1 message(s) to rank 1 on channel 0 but rank 1 receives 0; unmatched: rank 0 tb 0 step 0 (s to 1)}}
      ccl.send i[0] to 1
    }
  }
  ccl.gpu 1 chunks(1, 1, 0) {}
}
