// An algorithm whose third transfer names a link that fc:2 does not have.
module {
  ccl.algorithm @badlink attributes {collective = "allgather", input_chunks = 1 : i64, output_chunks = 2 : i64, ranks = 2 : i64, topology = "fc:2"} {
    ccl.transfer copy 0 : i[0] -> 0 : o[0] step 0
    ccl.transfer copy 1 : i[0] -> 1 : o[1] step 0
    ccl.transfer copy 0 : i[0] -> 1 : o[0] step 0 {link = 99999 : i64}
    ccl.transfer copy 1 : i[0] -> 0 : o[1] step 0
  }
}
