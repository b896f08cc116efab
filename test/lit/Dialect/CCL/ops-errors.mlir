// RUN: ccsynth-opt %s -split-input-file -verify-diagnostics

// Every verifier of the ccl dialect, one diagnostic per case.

//===--- ccl.algorithm / ccl.program metadata ---===//

// expected-error @+1 {{unknown collective 'allgatherr'}}
ccl.algorithm @a attributes {collective = "allgatherr", ranks = 2, input_chunks = 1, output_chunks = 2} {}

// -----

// expected-error @+1 {{'ranks' must be between 1 and 65536}}
ccl.algorithm @a attributes {collective = "allgather", ranks = 0, input_chunks = 1, output_chunks = 2} {}

// -----

// expected-error @+1 {{chunk counts must be between 0 and 2^24}}
ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = -1, output_chunks = 2} {}

// -----

// expected-error @+1 {{'chunk_factor' must be between 1 and 2^20}}
ccl.algorithm @a attributes {collective = "allgather", ranks = 2, chunk_factor = 0, input_chunks = 1, output_chunks = 2} {}

// -----

// expected-error @+1 {{root 5 is not a rank}}
ccl.algorithm @a attributes {collective = "broadcast", ranks = 2, root = 5, input_chunks = 1, output_chunks = 1} {}

// -----

// expected-error @+1 {{chunk counts (1 in, 4 out) do not match allgather(ranks=2, chunks=1) (1 in, 2 out)}}
ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 4} {}

// -----

// expected-error @+1 {{a custom collective needs 'precondition' and 'postcondition' arrays}}
ccl.algorithm @a attributes {collective = "custom", ranks = 2, input_chunks = 1, output_chunks = 1} {}

// -----

// expected-error @+1 {{'precondition' must hold one array<i64: ...> per rank}}
ccl.algorithm @a attributes {collective = "custom", ranks = 1, input_chunks = 1, output_chunks = 1, precondition = [1], postcondition = [[unit]]} {}

// -----

// expected-error @+1 {{'postcondition' must hold one array per rank}}
ccl.algorithm @a attributes {collective = "custom", ranks = 1, input_chunks = 1, output_chunks = 1, precondition = [array<i64: 0>], postcondition = [1]} {}

// -----

// expected-error @+1 {{a postcondition entry must be array<i64: ...> or unit}}
ccl.algorithm @a attributes {collective = "custom", ranks = 1, input_chunks = 1, output_chunks = 1, precondition = [array<i64: 0>], postcondition = [[1]]} {}

// -----

// expected-error @+1 {{conditions must list every rank}}
ccl.algorithm @a attributes {collective = "custom", ranks = 2, input_chunks = 1, output_chunks = 1, precondition = [array<i64: 0>], postcondition = [[unit]]} {}

// -----

// expected-error @+1 {{protocol 'LL64' is not Simple, LL or LL128}}
ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2, protocol = "LL64"} {}

// -----

// expected-error @+1 {{'min_bytes' and 'max_bytes' must be >= 0}}
ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2, min_bytes = -1} {}

// -----

// expected-error @+1 {{'max_bytes' (10) is below 'min_bytes' (20); use 0 for no upper bound}}
ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2, min_bytes = 20, max_bytes = 10} {}

// -----

// expected-error @+1 {{'scratch_chunks' must be between 0 and 2^24}}
ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2, scratch_chunks = -2} {}

// -----

ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2} {
  // expected-error @+1 {{is not allowed in a ccl.algorithm (only ccl.transfer is)}}
  ccl.copy i[0] -> o[0]
}

//===--- ccl.transfer ---===//

// -----

ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2} {
  // expected-error @+1 {{count must be at least 1 (got 0)}}
  ccl.transfer copy 0:i[0] -> 1:o[0] count 0 step 0
}

// -----

ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2} {
  // expected-error @+1 {{step must be non-negative (got -1)}}
  ccl.transfer copy 0:i[0] -> 1:o[0] step -1
}

// -----

ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2} {
  // expected-error @+1 {{source rank 2 is not a rank of the algorithm (0..1)}}
  ccl.transfer copy 2:i[0] -> 1:o[0] step 0
}

// -----

ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2} {
  // expected-error @+1 {{destination range o[1..3) is outside the output buffer (2 chunks)}}
  ccl.transfer copy 0:o[0] -> 1:o[1] count 2 step 0
}

// -----

ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2} {
  // expected-error @+1 {{source range s[0..1) is outside the scratch buffer (0 chunks)}}
  ccl.transfer copy 0:s[0] -> 1:o[1] step 0
}

// -----

ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2} {
  // expected-error @+1 {{moves a range onto itself}}
  ccl.transfer copy 1:o[1] -> 1:o[1] step 0
}

// -----

ccl.algorithm @a attributes {collective = "allgather", ranks = 2, input_chunks = 1, output_chunks = 2} {
  // expected-error @+1 {{'channel' must be non-negative}}
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0 {channel = -1}
}

//===--- ccl.program ---===//

// -----

// expected-error @+1 {{unknown collective 'foo'}}
ccl.program @p attributes {collective = "foo", ranks = 1, input_chunks = 1, output_chunks = 1} {}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{is not allowed in a ccl.program (only ccl.gpu is)}}
  ccl.algorithm @a attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {}
  // expected-error @+1 {{duplicates rank 0}}
  ccl.gpu 0 chunks(1, 1, 0) {}
}

// -----

// expected-error @+1 {{has no ccl.gpu for rank 1 (every rank needs one)}}
ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {}
}

//===--- ccl.gpu ---===//

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{rank 3 is not a rank of the program (0..0)}}
  ccl.gpu 3 chunks(1, 1, 0) {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{buffer sizes (2, 1) differ from the program's (1, 1)}}
  ccl.gpu 0 chunks(2, 1, 0) {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{scratch size must be between 0 and 2^24}}
  ccl.gpu 0 chunks(1, 1, -1) {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{is not allowed in a ccl.gpu (only steps or ccl.threadblock are)}}
    ccl.transfer copy 0:i[0] -> 0:o[0] step 0
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{mixes threadblocks and unassigned steps}}
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.copy i[0] -> o[0]
    ccl.threadblock 0 send -1 recv -1 channel 0 {}
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{has threadblock dependencies but is not in a threadblock}}
    ccl.copy i[0] -> o[0] after [0:0]
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{id 1 is not dense (expected 0..0)}}
    ccl.threadblock 1 send -1 recv -1 channel 0 {}
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {}
    // expected-error @+1 {{duplicates threadblock id 0}}
    ccl.threadblock 0 send -1 recv -1 channel 0 {}
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> o[0]
      // expected-error @+1 {{depends on its own threadblock 0 (program order already covers it)}}
      ccl.copy i[0] -> o[0] after [0:0]
    }
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {
      // expected-error @+1 {{depends on threadblock 4, which rank 0 does not have}}
      ccl.copy i[0] -> o[0] after [4:0]
    }
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {
      // expected-error @+1 {{depends on step 2 of threadblock 1, which has only 1 steps}}
      ccl.copy i[0] -> o[0] after [1:2]
    }
    ccl.threadblock 1 send -1 recv -1 channel 0 {
      ccl.copy i[0] -> o[0]
    }
  }
}

//===--- ccl.threadblock ---===//

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{id must be non-negative}}
    ccl.threadblock -1 send -1 recv -1 channel 0 {}
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{channel must be non-negative (got -2)}}
    ccl.threadblock 0 send -1 recv -1 channel -2 {}
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{send peer 2 is neither -1 nor a rank}}
    ccl.threadblock 0 send 2 recv -1 channel 0 {}
  }
  ccl.gpu 1 chunks(1, 1, 0) {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {}
  ccl.gpu 1 chunks(1, 1, 0) {
    // expected-error @+1 {{recv peer 1 is the threadblock's own rank}}
    ccl.threadblock 0 send -1 recv 1 channel 0 {}
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {
      // expected-error @+1 {{is not allowed in a ccl.threadblock (only steps are)}}
      ccl.gpu 0 chunks(1, 1, 0) {}
    }
  }
}

//===--- steps ---===//

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{count must be at least 1 (got 0)}}
    ccl.copy i[0] -> o[0] count 0
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{'step' and 'order' must be non-negative}}
    ccl.copy i[0] -> o[0] {step = -1}
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{send peer 2 is not a rank (0..1)}}
    ccl.send i[0] to 2
  }
  ccl.gpu 1 chunks(1, 1, 0) {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{recv peer 0 is the step's own rank}}
    ccl.recv from 0 -> o[0]
  }
  ccl.gpu 1 chunks(1, 1, 0) {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{source range s[0..1) is outside rank 0's scratch buffer (0 chunks)}}
    ccl.recv_reduce_copy from 1 with s[0] -> o[0]
  }
  ccl.gpu 1 chunks(1, 1, 0) {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    // expected-error @+1 {{destination range o[0..2) is outside rank 0's output buffer (1 chunks)}}
    ccl.recv_copy_send from 1 -> o[0] to 1 count 2
  }
  ccl.gpu 1 chunks(1, 1, 0) {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {
      // expected-error @+1 {{dependency list must hold threadblock:step pairs}}
      "ccl.copy"() <{src_buffer = 0 : i32, src_offset = 0 : i64, dst_buffer = 1 : i32, dst_offset = 0 : i64, deps = array<i64: 1>}> : () -> ()
    }
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 1, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send -1 recv -1 channel 0 {
      // expected-error @+1 {{dependencies must be non-negative}}
      ccl.copy i[0] -> o[0] after [-1:0]
    }
  }
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 3, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send 1 recv -1 channel 0 {
      // expected-error @+1 {{sends to 2 but threadblock 0 sends to 1}}
      ccl.send i[0] to 2
    }
  }
  ccl.gpu 1 chunks(1, 1, 0) {}
  ccl.gpu 2 chunks(1, 1, 0) {}
}

// -----

ccl.program @p attributes {collective = "allreduce", ranks = 3, input_chunks = 1, output_chunks = 1} {
  ccl.gpu 0 chunks(1, 1, 0) {
    ccl.threadblock 0 send 1 recv -1 channel 0 {
      // expected-error @+1 {{receives from 2 but threadblock 0 receives from -1}}
      ccl.recv_reduce_send from 2 with i[0] to 1
    }
  }
  ccl.gpu 1 chunks(1, 1, 0) {}
  ccl.gpu 2 chunks(1, 1, 0) {}
}

// -----

// expected-error @+1 {{expects parent op to be one of 'ccl.gpu, ccl.threadblock'}}
ccl.send i[0] to 1

// -----

//===--- switch transfers ---===//

ccl.algorithm @a attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{a switch_reduce goes through a switch: name it with 'through N'}}
  ccl.transfer switch_reduce 0:i[0] -> 1:o[0] step 0
}

// -----

ccl.algorithm @a attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{a copy goes point to point: 'through' names the switch of a switch_reduce or multicast}}
  ccl.transfer copy 0:i[0] -> 1:o[0] step 0 through 0
}

// -----

ccl.algorithm @a attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{a multicast goes through switch 0 and names no link}}
  ccl.transfer multicast 0:o[0] -> 1:o[0] step 0 through 0 {link = 3}
}

// -----

ccl.algorithm @a attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{'through' must be non-negative}}
  ccl.transfer multicast 0:o[0] -> 1:o[0] step 0 through -1
}

// -----

ccl.algorithm @a attributes {collective = "allreduce", ranks = 2, input_chunks = 1, output_chunks = 1} {
  // expected-error @+1 {{moves a range onto itself}}
  ccl.transfer multicast 0:o[0] -> 0:o[0] step 0 through 0
}
