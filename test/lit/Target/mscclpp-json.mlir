// RUN: ccsynth-translate --ccl-to-mscclpp-json %s | FileCheck %s

// The same 2-rank in-place AllReduce as msccl-xml.mlir, as an MSCCL++
// execution plan: memory channels paired per rank pair, a put into the
// peer's staging scratch followed by a signal, a wait before using
// received data, and one semaphore per cross-threadblock dependency.
// (llvm::json prints object keys sorted.)

// CHECK:      "buffer_alignment": 16,
// CHECK-NEXT: "collective": "allreduce",
// CHECK-NEXT: "gpus": [
// CHECK:          "channels": [
// CHECK-NEXT:       {
// CHECK-NEXT:         "channel_type": "memory",
// CHECK-NEXT:         "connected_to": [
// CHECK-NEXT:           1
// CHECK:          "id": 0,
// CHECK-NEXT:     "input_chunks": 1,
// CHECK-NEXT:     "output_chunks": 1,
// CHECK-NEXT:     "remote_buffers": [
// CHECK-NEXT:       {
// CHECK-NEXT:         "access_channel_types": [
// CHECK-NEXT:           "memory"
// CHECK-NEXT:         ],
// CHECK-NEXT:         "rank": 1,
// CHECK-NEXT:         "type": "s"
// The receive into i[0] (which holds input data) is staged in s[2].
// CHECK:          "scratch_chunks": 3,
// CHECK-NEXT:     "semaphores": [
// CHECK-NEXT:       {
// CHECK-NEXT:         "init_value": 0
// CHECK:          "threadblocks": [
// CHECK:              "id": 0,
// CHECK-NEXT:         "ops": [
// CHECK:                  "name": "put",
// CHECK:                  "name": "nop"
// CHECK:                  "name": "signal"
// CHECK:                  "name": "sem_acquire",
// CHECK:                  "name": "wait"
// CHECK:                  "name": "nop"
// CHECK:                  "name": "copy",
// CHECK-NEXT:             "src_buff": [
// CHECK-NEXT:               {
// CHECK-NEXT:                 "index": 2,
// CHECK-NEXT:                 "size": 1,
// CHECK-NEXT:                 "type": "s"
// CHECK:                  "name": "sem_release",
// CHECK:          "id": 1,
// CHECK:                  "name": "wait"
// CHECK:                  "name": "re",
// CHECK-NEXT:             "reduce_op": "sum",
// CHECK:                  "name": "put",
// CHECK:                  "name": "signal"
// CHECK:      "inplace": true,
// CHECK-NEXT: "max_message_size": 65536,
// CHECK-NEXT: "min_message_size": 0,
// CHECK-NEXT: "name": "ar2",
// CHECK-NEXT: "num_threads_per_block": 1024,
// CHECK-NEXT: "protocol": "Simple",

ccl.program @ar2 attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1, inplace, max_bytes = 65536} {
  ccl.gpu 0 chunks(1, 1, 2) {
    ccl.threadblock 0 send 1 recv 1 channel 0 {
      ccl.send i[0] to 1
      ccl.recv from 1 -> i[0] after [1:0, 2:0]
    }
    ccl.threadblock 1 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[0]
    }
    ccl.threadblock 2 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[1]
    }
  }
  ccl.gpu 1 chunks(1, 1, 0) {
    ccl.threadblock 0 send 0 recv 0 channel 0 {
      ccl.recv_reduce_copy_send from 0 with i[0] -> i[0] to 0
    }
  }
}

// An out-of-place copy into a range written once gets the put directly.
// RUN: ccsynth-translate --ccl-to-mscclpp-json %S/Inputs/direct.mlir | FileCheck %s --check-prefix=DIRECT
// DIRECT:      "rank": 1,
// DIRECT-NEXT: "type": "o"
// DIRECT:      "scratch_chunks": 0,
// DIRECT:      "dst_buff": [
// DIRECT-NEXT:   {
// DIRECT-NEXT:     "buffer_id": 0,
// DIRECT-NEXT:     "index": 0,
// DIRECT-NEXT:     "size": 1

// With one threadblock per rank (--max-tbs-per-rank=1) rank 0's three
// threadblocks merge into one that runs their steps in level order (the
// send and both copies wait for nothing; the receive waits for rank 1,
// which waits for the send) and holds the receive's dependencies on the
// copies by program order: a barrier, no semaphores.
// RUN: ccsynth-translate --ccl-to-mscclpp-json --max-tbs-per-rank=1 %s | FileCheck %s --check-prefix=MERGED
// MERGED:          "id": 0,
// MERGED:          "semaphores": [],
// MERGED-NEXT:     "threadblocks": [
// MERGED-NEXT:       {
// MERGED:              "id": 0,
// MERGED-NEXT:         "ops": [
// MERGED:                "name": "put",
// MERGED:                "name": "nop"
// MERGED:                "name": "signal"
// MERGED:                "name": "copy",
// MERGED:                "name": "nop"
// MERGED:                "name": "copy",
// MERGED:                "name": "nop"
// MERGED:                "name": "wait"
// MERGED:                "name": "nop"
// MERGED:                "name": "copy",
// MERGED-NOT:            "sem_
// MERGED:          "id": 1,
// MERGED:          "semaphores": [],
