// Both ranks receive before they send.
ccl.program @cycle attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send 1 recv 1 channel 0 {
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
