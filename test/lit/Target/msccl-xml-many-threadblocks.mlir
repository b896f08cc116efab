// RUN: ccsynth-translate --ccl-to-msccl-xml %s | FileCheck %s
// RUN: ccsynth-translate --ccl-to-msccl-xml %s | ccsynth-translate --import-msccl-xml | ccsynth-opt --ccl-verify-collective | FileCheck %s --check-prefix=ROUNDTRIP

// MSCCL stores the threadblock a step waits for as int8_t. Rank 0 has 130
// threadblocks and its send waits for the copy on threadblock 129: the
// exporter numbers the threadblocks that are waited for first (129 -> 0),
// then the others in their order (0 -> 1, ..., 128 -> 129), and rewrites
// the dependency to match. Rank 1, within the limit, keeps its numbering.

// CHECK:      <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="128">
// CHECK-NEXT:   <tb id="0" send="-1" recv="-1" chan="4">
// CHECK-NEXT:     <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>
// CHECK-NEXT:   </tb>
// CHECK-NEXT:   <tb id="1" send="1" recv="1" chan="0">
// CHECK-NEXT:     <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="-1" cnt="1" depid="0" deps="0" hasdep="0"/>
// CHECK-NEXT:     <step s="1" type="r" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
// CHECK-NEXT:   </tb>
// CHECK-NEXT:   <tb id="2" send="-1" recv="-1" chan="0">
// CHECK-NEXT:     <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
// CHECK:        <tb id="129" send="-1" recv="-1" chan="4">
// CHECK-NEXT:     <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="s" dstoff="127" cnt="1" depid="-1" deps="-1" hasdep="0"/>
// CHECK-NEXT:   </tb>
// CHECK-NEXT: </gpu>
// CHECK-NEXT: <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0">
// CHECK-NEXT:   <tb id="0" send="0" recv="0" chan="0">
// CHECK-NEXT:     <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="-1" cnt="1" depid="1" deps="0" hasdep="0"/>
// CHECK-NEXT:     <step s="1" type="r" srcbuf="i" srcoff="-1" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
// CHECK-NEXT:   </tb>
// CHECK-NEXT:   <tb id="1" send="-1" recv="-1" chan="0">
// CHECK-NEXT:     <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="1"/>
// CHECK-NEXT:   </tb>
// CHECK-NEXT: </gpu>

// ROUNDTRIP: ccl.algorithm @many_tbs
// ROUNDTRIP-DAG: ccl.transfer copy 0 : i[0] -> 1 : o[0]
// ROUNDTRIP-DAG: ccl.transfer copy 1 : i[0] -> 0 : o[1]

ccl.program @many_tbs attributes {collective = "allgather", ranks = 2,
    input_chunks = 1, output_chunks = 2, protocol = "Simple"} {
  ccl.gpu 0 chunks(1, 2, 128) {
    ccl.threadblock 0 send 1 recv 1 channel 0 {
      ccl.send i[0] to 1 after [129:0]
      ccl.recv from 1 -> o[1]
    }
    ccl.threadblock 1 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[0]
    }
    ccl.threadblock 2 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[1]
    }
    ccl.threadblock 3 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[2]
    }
    ccl.threadblock 4 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[3]
    }
    ccl.threadblock 5 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[4]
    }
    ccl.threadblock 6 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[5]
    }
    ccl.threadblock 7 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[6]
    }
    ccl.threadblock 8 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[7]
    }
    ccl.threadblock 9 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[8]
    }
    ccl.threadblock 10 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[9]
    }
    ccl.threadblock 11 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[10]
    }
    ccl.threadblock 12 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[11]
    }
    ccl.threadblock 13 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[12]
    }
    ccl.threadblock 14 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[13]
    }
    ccl.threadblock 15 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[14]
    }
    ccl.threadblock 16 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[15]
    }
    ccl.threadblock 17 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[16]
    }
    ccl.threadblock 18 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[17]
    }
    ccl.threadblock 19 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[18]
    }
    ccl.threadblock 20 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[19]
    }
    ccl.threadblock 21 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[20]
    }
    ccl.threadblock 22 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[21]
    }
    ccl.threadblock 23 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[22]
    }
    ccl.threadblock 24 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[23]
    }
    ccl.threadblock 25 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[24]
    }
    ccl.threadblock 26 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[25]
    }
    ccl.threadblock 27 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[26]
    }
    ccl.threadblock 28 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[27]
    }
    ccl.threadblock 29 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[28]
    }
    ccl.threadblock 30 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[29]
    }
    ccl.threadblock 31 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> s[30]
    }
    ccl.threadblock 32 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[31]
    }
    ccl.threadblock 33 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[32]
    }
    ccl.threadblock 34 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[33]
    }
    ccl.threadblock 35 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[34]
    }
    ccl.threadblock 36 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[35]
    }
    ccl.threadblock 37 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[36]
    }
    ccl.threadblock 38 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[37]
    }
    ccl.threadblock 39 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[38]
    }
    ccl.threadblock 40 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[39]
    }
    ccl.threadblock 41 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[40]
    }
    ccl.threadblock 42 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[41]
    }
    ccl.threadblock 43 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[42]
    }
    ccl.threadblock 44 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[43]
    }
    ccl.threadblock 45 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[44]
    }
    ccl.threadblock 46 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[45]
    }
    ccl.threadblock 47 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[46]
    }
    ccl.threadblock 48 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[47]
    }
    ccl.threadblock 49 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[48]
    }
    ccl.threadblock 50 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[49]
    }
    ccl.threadblock 51 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[50]
    }
    ccl.threadblock 52 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[51]
    }
    ccl.threadblock 53 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[52]
    }
    ccl.threadblock 54 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[53]
    }
    ccl.threadblock 55 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[54]
    }
    ccl.threadblock 56 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[55]
    }
    ccl.threadblock 57 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[56]
    }
    ccl.threadblock 58 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[57]
    }
    ccl.threadblock 59 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[58]
    }
    ccl.threadblock 60 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[59]
    }
    ccl.threadblock 61 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[60]
    }
    ccl.threadblock 62 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[61]
    }
    ccl.threadblock 63 send -1 recv -1 channel 1 {
      ccl.copy i[0] -> s[62]
    }
    ccl.threadblock 64 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[63]
    }
    ccl.threadblock 65 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[64]
    }
    ccl.threadblock 66 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[65]
    }
    ccl.threadblock 67 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[66]
    }
    ccl.threadblock 68 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[67]
    }
    ccl.threadblock 69 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[68]
    }
    ccl.threadblock 70 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[69]
    }
    ccl.threadblock 71 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[70]
    }
    ccl.threadblock 72 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[71]
    }
    ccl.threadblock 73 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[72]
    }
    ccl.threadblock 74 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[73]
    }
    ccl.threadblock 75 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[74]
    }
    ccl.threadblock 76 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[75]
    }
    ccl.threadblock 77 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[76]
    }
    ccl.threadblock 78 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[77]
    }
    ccl.threadblock 79 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[78]
    }
    ccl.threadblock 80 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[79]
    }
    ccl.threadblock 81 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[80]
    }
    ccl.threadblock 82 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[81]
    }
    ccl.threadblock 83 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[82]
    }
    ccl.threadblock 84 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[83]
    }
    ccl.threadblock 85 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[84]
    }
    ccl.threadblock 86 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[85]
    }
    ccl.threadblock 87 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[86]
    }
    ccl.threadblock 88 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[87]
    }
    ccl.threadblock 89 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[88]
    }
    ccl.threadblock 90 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[89]
    }
    ccl.threadblock 91 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[90]
    }
    ccl.threadblock 92 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[91]
    }
    ccl.threadblock 93 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[92]
    }
    ccl.threadblock 94 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[93]
    }
    ccl.threadblock 95 send -1 recv -1 channel 2 {
      ccl.copy i[0] -> s[94]
    }
    ccl.threadblock 96 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[95]
    }
    ccl.threadblock 97 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[96]
    }
    ccl.threadblock 98 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[97]
    }
    ccl.threadblock 99 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[98]
    }
    ccl.threadblock 100 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[99]
    }
    ccl.threadblock 101 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[100]
    }
    ccl.threadblock 102 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[101]
    }
    ccl.threadblock 103 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[102]
    }
    ccl.threadblock 104 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[103]
    }
    ccl.threadblock 105 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[104]
    }
    ccl.threadblock 106 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[105]
    }
    ccl.threadblock 107 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[106]
    }
    ccl.threadblock 108 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[107]
    }
    ccl.threadblock 109 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[108]
    }
    ccl.threadblock 110 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[109]
    }
    ccl.threadblock 111 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[110]
    }
    ccl.threadblock 112 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[111]
    }
    ccl.threadblock 113 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[112]
    }
    ccl.threadblock 114 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[113]
    }
    ccl.threadblock 115 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[114]
    }
    ccl.threadblock 116 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[115]
    }
    ccl.threadblock 117 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[116]
    }
    ccl.threadblock 118 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[117]
    }
    ccl.threadblock 119 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[118]
    }
    ccl.threadblock 120 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[119]
    }
    ccl.threadblock 121 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[120]
    }
    ccl.threadblock 122 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[121]
    }
    ccl.threadblock 123 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[122]
    }
    ccl.threadblock 124 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[123]
    }
    ccl.threadblock 125 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[124]
    }
    ccl.threadblock 126 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[125]
    }
    ccl.threadblock 127 send -1 recv -1 channel 3 {
      ccl.copy i[0] -> s[126]
    }
    ccl.threadblock 128 send -1 recv -1 channel 4 {
      ccl.copy i[0] -> s[127]
    }
    ccl.threadblock 129 send -1 recv -1 channel 4 {
      ccl.copy i[0] -> o[0]
    }
  }
  ccl.gpu 1 chunks(1, 2, 0) {
    ccl.threadblock 0 send 0 recv 0 channel 0 {
      ccl.send i[0] to 0 after [1:0]
      ccl.recv from 0 -> o[0]
    }
    ccl.threadblock 1 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> o[1]
    }
  }
}
