// RUN: ccsynth-translate --ccl-to-msccl-xml %s | FileCheck %s
// RUN: ccsynth-translate --ccl-to-msccl-xml %s | ccsynth-translate --import-msccl-xml | ccsynth-opt --ccl-verify-collective | FileCheck %s --check-prefix=ROUNDTRIP

// A 2-rank in-place AllReduce: rank 1 reduces and forwards in one step;
// rank 0 snapshots its input into scratch in two local threadblocks before
// the result overwrites it, so its receive waits for both (one nop carries
// the first dependency) and both copies set their flag.

// CHECK:      <algo name="ar2" proto="LL" nchannels="1" nchunksperloop="1" ngpus="2" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="65536">
// CHECK-NEXT:   <gpu id="0" i_chunks="1" o_chunks="1" s_chunks="2">
// CHECK-NEXT:     <tb id="0" send="1" recv="1" chan="0">
// CHECK-NEXT:       <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="-1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
// CHECK-NEXT:       <step s="1" type="nop" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0" depid="1" deps="0" hasdep="0"/>
// CHECK-NEXT:       <step s="2" type="r" srcbuf="i" srcoff="-1" dstbuf="i" dstoff="0" cnt="1" depid="2" deps="0" hasdep="0"/>
// CHECK-NEXT:     </tb>
// CHECK-NEXT:     <tb id="1" send="-1" recv="-1" chan="0">
// CHECK-NEXT:       <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
// CHECK-NEXT:     </tb>
// CHECK-NEXT:     <tb id="2" send="-1" recv="-1" chan="0">
// CHECK-NEXT:       <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="1"/>
// CHECK-NEXT:     </tb>
// CHECK-NEXT:   </gpu>
// CHECK-NEXT:   <gpu id="1" i_chunks="1" o_chunks="1" s_chunks="0">
// CHECK-NEXT:     <tb id="0" send="0" recv="0" chan="0">
// CHECK-NEXT:       <step s="0" type="rrcs" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
// CHECK-NEXT:     </tb>
// CHECK-NEXT:   </gpu>
// CHECK-NEXT: </algo>

// The XML runs symbolically back into a schedule that the core verifier
// proves.
// ROUNDTRIP: ccl.algorithm @ar2
// ROUNDTRIP: ccl.transfer reduce 0 : i[0] -> 1 : i[0]
// ROUNDTRIP: ccl.transfer copy 1 : i[0] -> 0 : i[0]

ccl.program @ar2 attributes {collective = "allreduce", ranks = 2,
    input_chunks = 1, output_chunks = 1, inplace, protocol = "LL",
    max_bytes = 65536} {
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
