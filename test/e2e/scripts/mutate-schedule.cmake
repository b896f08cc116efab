# Breaks the ring allreduce schedule written by e2e:baseline-ring-h100x2 in
# one of two ways and checks that `ccsynth verify` fails naming the problem:
#   MODE=delete     drop the first reduce transfer
#   MODE=duplicate  repeat the first reduce transfer after every other step
# The file is edited as one string: CMake lists do not split inside '['.
file(READ ${WORKDIR}/ring-ar-h100x2.json text)
string(REGEX MATCH "\n    {\"step\":[0-9]+,\"op\":\"reduce\"[^\n]*" line "${text}")
if(NOT line)
  message(FATAL_ERROR "no reduce transfer found")
endif()
if(MODE STREQUAL "delete")
  # Drop the line (and the comma it leaves behind, if it was the last one).
  string(REPLACE "${line}" "" text "${text}")
  string(REGEX REPLACE ",\n  \\]" "\n  ]" text "${text}")
else()
  string(REGEX REPLACE "\"step\":[0-9]+" "\"step\":100000" again "${line}")
  string(REGEX REPLACE ",$" "" again "${again}")
  string(REGEX REPLACE "\n  \\]\n}" ",${again}\n  ]\n}" text "${text}")
endif()
file(WRITE ${WORKDIR}/mutated-${MODE}.json "${text}")
execute_process(COMMAND ${CC} verify ${WORKDIR}/mutated-${MODE}.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
message("${o}${e}")
if(NOT rc EQUAL 3)
  message(FATAL_ERROR "verify exited ${rc}, expected 3")
endif()
if(MODE STREQUAL "delete")
  set(want "(missing|never written|holds no data)")
else()
  set(want "counted twice")
endif()
if(NOT "${o}${e}" MATCHES "rank [0-9]+ (input|output|scratch) chunk [0-9]+")
  message(FATAL_ERROR "the error does not name a rank/buffer/chunk")
endif()
if(NOT "${o}${e}" MATCHES "${want}")
  message(FATAL_ERROR "the error does not say '${want}'")
endif()
