# Hostile inputs, made here in WORKDIR: each is an error with exit code 1 and
# a clear message, never a crash, a hang or an empty read.
#   -DCC=ccsynth [-DOPT=ccsynth-opt -DTRANSLATE=ccsynth-translate]
#   [-DSANITIZED=ON] -DWORKDIR=dir
file(REMOVE_RECURSE ${WORKDIR})
file(MAKE_DIRECTORY ${WORKDIR}/a-directory.json)

function(expect_error rc regex)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORKDIR}
    RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  set(all "${out}${err}")
  message("${ARGN}: exit ${got}\n${all}")
  if(NOT "${got}" STREQUAL "${rc}")
    message(FATAL_ERROR "exit code ${got}, expected ${rc}")
  endif()
  if(NOT all MATCHES "${regex}")
    message(FATAL_ERROR "output does not match '${regex}'")
  endif()
endfunction()

# 5,000 nested modules (40 KB) used to overflow MLIR's parser stack.
string(REPEAT "module {\n" 5000 open)
string(REPEAT "}\n" 5000 close)
file(WRITE ${WORKDIR}/deep.mlir "${open}${close}")
if(OPT)
  expect_error(1 "deep.mlir:201:8: error: input nested deeper than 200"
    ${CC} compile deep.mlir -o ${WORKDIR}/deep.xml)
  if(EXISTS ${WORKDIR}/deep.xml)
    message(FATAL_ERROR "deep.xml was written")
  endif()
  expect_error(1 "deep.mlir:201:8: error: input nested deeper than 200"
    ${OPT} deep.mlir)
  expect_error(1 "deep.mlir:201:8: error: input nested deeper than 200"
    ${TRANSLATE} --ccl-to-msccl-xml deep.mlir)
endif()
# Deep JSON likewise.
string(REPEAT "[" 100000 open)
file(WRITE ${WORKDIR}/deep.json "${open}")
expect_error(1 "deep.json:1:257: error: JSON nested deeper than 256" ${CC} verify deep.json)

# A directory and a FIFO are not files (a FIFO without a writer used to block).
expect_error(1 "error: cannot read 'a-directory.json': it is a directory"
  ${CC} verify a-directory.json)
execute_process(COMMAND mkfifo ${WORKDIR}/fifo.json RESULT_VARIABLE rc)
if(rc EQUAL 0)
  expect_error(1 "error: cannot read '.*fifo.json': not a regular file"
    ${CC} topo show ${WORKDIR}/fifo.json)
  expect_error(1 "error: cannot read 'fifo.json': not a regular file"
    ${CC} verify fifo.json)
endif()
# Endless devices are refused before anything is read (reading only).
if(EXISTS /dev/zero)
  expect_error(1 "error: cannot read '/dev/zero': not a regular file"
    ${CC} verify /dev/zero)
endif()

# Allocation failure is a message and exit code 1, not an abort: a
# 4096-rank fully connected machine needs more than 400 MB. (AddressSanitizer
# reserves terabytes of address space, so a sanitized build cannot run under
# a memory limit.)
if(SANITIZED)
  return()
endif()
find_program(SH sh)
expect_error(1 "ccsynth: error: out of memory"
  ${SH} -c "ulimit -v 400000 && exec \"$0\" topo show fc:4096" ${CC})
