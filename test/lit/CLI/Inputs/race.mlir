// Rank 0 copies o[1] in another threadblock while its receive writes it,
// with no dependency: structurally fine, but a data race.
ccl.program @race attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2, scratch_chunks = 1} {
  ccl.gpu 0 chunks(1, 2, 1) {
    ccl.threadblock 0 send 1 recv 1 channel 0 {
      ccl.send i[0] to 1
      ccl.recv from 1 -> o[1]
    }
    ccl.threadblock 1 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> o[0]
      ccl.copy o[1] -> s[0]
    }
  }
  ccl.gpu 1 chunks(1, 2, 1) {
    ccl.threadblock 0 send 0 recv 0 channel 0 {
      ccl.send i[0] to 0
      ccl.recv from 0 -> o[0]
    }
    ccl.threadblock 1 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> o[1]
    }
  }
}
