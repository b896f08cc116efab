// RUN: ccsynth-opt %s -split-input-file --ccl-check-deadlock -verify-diagnostics

// Both ranks receive before they send: a cycle of waits.
ccl.program @cycle attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send 1 recv 1 channel 0 {
      // expected-error @+1 {{deadlock: rank 0 tb 0 step 0 (r from 1) waits for rank 1 tb 0 step 1 (s to 0) [its message], which waits for rank 1 tb 0 step 0 (r from 0) [program order], which waits for rank 0 tb 0 step 1 (s to 1) [its message], which waits for rank 0 tb 0 step 0 (r from 1) [program order]}}
      ccl.recv from 1 -> o[0]
      ccl.send i[0] to 1
    }
  }
  ccl.gpu 1 chunks(1, 1, 0) {
    ccl.threadblock 0 send 0 recv 0 channel 0 {
      ccl.recv from 0 -> o[0]
      ccl.send i[0] to 0
    }
  }
}

// -----

// Two threadblocks of one rank waiting for each other.
ccl.program @deps attributes {collective = "allreduce", ranks = 1,
    input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 1) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {
      // expected-error @+1 {{deadlock: rank 0 tb 0 step 0 (cpy) waits for rank 0 tb 1 step 0 (cpy) [dependency], which waits for rank 0 tb 0 step 0 (cpy) [dependency]}}
      ccl.copy i[0] -> o[0] after [1:0]
    }
    ccl.threadblock 1 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[0] after [0:0]
    }
  }
}

// -----

// The second message is sent with 2 chunks but received with 1.
ccl.program @counts attributes {collective = "allreduce", ranks = 2,
    chunk_factor = 2, input_chunks = 2, output_chunks = 2} {
  ccl.gpu 0 chunks(2, 2, 0) {
    ccl.threadblock 0 send 1 recv -1 channel 0 {
      ccl.send i[0] to 1
      // expected-error @+1 {{message 1 from rank 0 to rank 1 on channel 0: rank 0 tb 0 step 1 (s to 1) sends cnt 2 but rank 1 tb 0 step 1 (r from 0) receives cnt 1}}
      ccl.send i[0] to 1 count 2
    }
  }
  ccl.gpu 1 chunks(2, 2, 0) {
    ccl.threadblock 0 send -1 recv 0 channel 0 {
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[1]
    }
  }
}

// -----

// Rank 1 listens on channel 1 while rank 0 sends on channel 0.
ccl.program @channels attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send 1 recv -1 channel 0 {
      // expected-error @+1 {{rank 0 sends 1 message(s) to rank 1 on channel 0 but rank 1 receives 0; unmatched: rank 0 tb 0 step 0 (s to 1)}}
      ccl.send i[0] to 1
    }
  }
  ccl.gpu 1 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv 0 channel 1 {
      // expected-error @+1 {{rank 0 sends 0 message(s) to rank 1 on channel 1 but rank 1 receives 1; unmatched: rank 1 tb 0 step 0 (r from 0)}}
      ccl.recv from 0 -> o[0]
    }
  }
}

// -----

// One connection per (channel, peer, direction).
ccl.program @twice attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send 1 recv -1 channel 0 {
      ccl.send i[0] to 1
    }
    // expected-error @+1 {{rank 0: threadblocks 0 and 1 both send to rank 1 on channel 0; one connection serves one threadblock}}
    ccl.threadblock 1 send 1 recv -1 channel 0 {
      ccl.send i[0] to 1
    }
  }
  ccl.gpu 1 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv 0 channel 0 {
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
    }
  }
}

// -----

// Bounded buffers: a connection holds 8 slots and a Simple send takes 4,
// so the third send of each rank waits for the peer's first receive,
// which comes after the peer's own third send.
ccl.program @full attributes {collective = "allreduce", ranks = 2,
    chunk_factor = 3, input_chunks = 3, output_chunks = 3} {
  ccl.gpu 0 chunks(3, 3, 0) {
    ccl.threadblock 0 send 1 recv 1 channel 0 {
      ccl.send i[0] to 1
      ccl.send i[1] to 1
      // expected-error @+1 {{deadlock: rank 0 tb 0 step 2 (s to 1) waits for rank 1 tb 0 step 3 (r from 0) [room in the connection's buffer], which waits for rank 1 tb 0 step 2 (s to 0) [program order], which waits for rank 0 tb 0 step 3 (r from 1) [room in the connection's buffer], which waits for rank 0 tb 0 step 2 (s to 1) [program order]; a connection buffers 8 slots and a Simple send takes 4 per chunk}}
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

// -----

// One send of 3 Simple chunks (12 slots) completes only while the peer
// receives it; both ranks send first.
ccl.program @large attributes {collective = "allreduce", ranks = 2,
    chunk_factor = 3, input_chunks = 3, output_chunks = 3} {
  ccl.gpu 0 chunks(3, 3, 0) {
    ccl.threadblock 0 send 1 recv 1 channel 0 {
      // expected-error @+1 {{deadlock: rank 0 tb 0 step 0 (s to 1) waits for rank 1 tb 0 step 0 (s to 0) [room in the connection's buffer], which waits for rank 0 tb 0 step 0 (s to 1) [room in the connection's buffer]}}
      ccl.send i[0] to 1 count 3
      ccl.recv from 1 -> o[0] count 3
    }
  }
  ccl.gpu 1 chunks(3, 3, 0) {
    ccl.threadblock 0 send 0 recv 0 channel 0 {
      ccl.send i[0] to 0 count 3
      ccl.recv from 0 -> o[0] count 3
    }
  }
}
