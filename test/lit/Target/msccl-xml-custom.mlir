// RUN: ccsynth-translate %s --ccl-to-msccl-xml --msccl-coll allgather | FileCheck %s
// RUN: ccsynth-translate %s --ccl-to-msccl-xml --msccl-coll alltoall | FileCheck %s --check-prefix=A2A
// RUN: not ccsynth-translate %s --ccl-to-msccl-xml --msccl-coll scatter 2>&1 | FileCheck %s --check-prefix=SCATTER
// RUN: not ccsynth-translate %s --ccl-to-msccl-xml --msccl-coll bcast 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// A custom collective (rank 0's chunk to rank 1) is exported under the NCCL
// call that launches it; nchunksperloop is the smallest loop whose buffers,
// as that call sizes them, hold 1 input and 2 output chunks.
// CHECK: <algo name="shift" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0" outofplace="1"
// CHECK: <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
// A2A: nchunksperloop="2" ngpus="2" coll="alltoall"
// SCATTER: error: cannot launch the custom collective 'shift' as 'scatter': the runtime does not size the buffers of 'scatter' from one count
// UNKNOWN: error: cannot launch the custom collective 'shift' as 'bcast': 'bcast' is not a collective MSCCL knows

ccl.program @shift attributes {collective = "custom", collective_name = "shift",
    ranks = 2, input_chunks = 1, output_chunks = 2,
    precondition = [array<i64: 0>, array<i64: 1>],
    postcondition = [[unit, unit], [unit, array<i64: 0>]]} {
  ccl.gpu 0 chunks(1, 2, 0) {
    ccl.threadblock 0 send 1 recv -1 channel 0 {
      ccl.send i[0] to 1
    }
  }
  ccl.gpu 1 chunks(1, 2, 0) {
    ccl.threadblock 0 send -1 recv 0 channel 0 {
      ccl.recv from 0 -> o[1]
    }
  }
}
