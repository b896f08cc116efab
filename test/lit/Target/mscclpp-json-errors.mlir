// RUN: ccsynth-translate %s --ccl-to-mscclpp-json -verify-diagnostics

// 22 sends need 66 operations (put, nop, signal each); the MSCCL++
// executor runs at most 64 per threadblock. `ccsynth compile` avoids this
// by using smaller threadblocks for this target.
ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send 1 recv -1 channel 0 {
      // expected-error @+1 {{rank 0 threadblock 0 needs 66 MSCCL++ operations, more than the executor's 64; use fewer steps per threadblock (--max-tb-steps)}}
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
      ccl.send i[0] to 1
    }
  }
  ccl.gpu 1 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv 0 channel 0 {
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
      ccl.recv from 0 -> o[0]
    }
  }
}
