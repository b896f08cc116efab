# End-to-end tests of the .ccl front end through the ccsynth CLI: `check`,
# `verify` and `simulate` on the shipped programs, schedule output, and every
# error class of test/dsl/errors (location, caret line and exit code).
#
# dsl_expect(NAME RC <code> [MATCH <regex>...] [FILE <path>] CMD <args...>)
# runs CMD through scripts/expect.cmake, which checks the exit code and that
# the output matches every regex (write ';' as '[;]': lists split on it).
set(_dsl_expect ${CMAKE_CURRENT_LIST_DIR}/scripts/expect.cmake)
set(_dsl_out ${CMAKE_CURRENT_BINARY_DIR}/dsl-out)
file(MAKE_DIRECTORY ${_dsl_out})
function(dsl_expect name)
  cmake_parse_arguments(E "" "RC;FILE" "MATCH;CMD" ${ARGN})
  string(REPLACE ";" "\\;" match "${E_MATCH}")
  string(REPLACE ";" "\\;" cmd "${E_CMD}")
  add_test(NAME e2e:dsl.${name}
    COMMAND ${CMAKE_COMMAND}
      -DCMD=${cmd} -DRC=${E_RC} -DMATCH=${match} -DFILE=${E_FILE}
      -DWORKDIR=${_dsl_out} -P ${_dsl_expect})
endfunction()

set(_dsl_cc $<TARGET_FILE:ccsynth>)
set(_dsl_dir ${CCSYNTH_SOURCE_DIR}/sketches/dsl)
set(_dsl_errors_dir ${CCSYNTH_SOURCE_DIR}/test/dsl/errors)

file(GLOB _dsl_programs CONFIGURE_DEPENDS ${_dsl_dir}/*.ccl)
foreach(_prog ${_dsl_programs})
  get_filename_component(_name ${_prog} NAME_WE)
  dsl_expect(check.${_name} RC 0 MATCH ": OK: .* is implemented"
    CMD ${_dsl_cc} check ${_prog})
endforeach()

dsl_expect(check.ring-16 RC 0
  MATCH "allreduce\\(ranks=16, chunks=16, inplace\\) is implemented"
  CMD ${_dsl_cc} check ${_dsl_dir}/ring_allreduce.ccl -D ranks=16)
dsl_expect(check.hierarchical-2x8 RC 0
  MATCH "allreduce\\(ranks=16, chunks=16, inplace\\) is implemented"
        "parameters: nodes=2 gpus=8"
  CMD ${_dsl_cc} check ${_dsl_dir}/hierarchical_allreduce.ccl
      -D nodes=2 -D gpus=8)
dsl_expect(check.topology RC 0 MATCH "every transfer on a link of ring:8"
  CMD ${_dsl_cc} check ${_dsl_dir}/ring_allreduce.ccl -D ranks=8
      --topo ring:8)
# -o writes the verified schedule, which `verify` then proves again.
dsl_expect(check.output RC 0 FILE allpairs-4.json
  CMD ${_dsl_cc} check ${_dsl_dir}/allpairs_allreduce.ccl -D ranks=4
      -o allpairs-4.json -q)
dsl_expect(check.output-verifies RC 0
  MATCH "allpairs-4.json: OK: allreduce\\(ranks=4, chunks=4\\)"
  CMD ${_dsl_cc} verify allpairs-4.json)
set_tests_properties(e2e:dsl.check.output-verifies PROPERTIES
  DEPENDS e2e:dsl.check.output)
# A refuted program exits 3 and leaves no output file (expect.cmake checks
# that nothing named after -o exists).
dsl_expect(check.no-output-when-refuted RC 3
  MATCH "is NOT implemented by this program"
  CMD ${_dsl_cc} check ${_dsl_errors_dir}/verify-wrong-output.ccl
      -o ${_dsl_out}/refuted.json)
dsl_expect(check.not-a-program RC 1 MATCH "'check' takes a .ccl program"
  CMD ${_dsl_cc} check ${CCSYNTH_SOURCE_DIR}/README.md)
dsl_expect(check.missing-file RC 1 MATCH "error: cannot open 'no-such-file.ccl'"
  CMD ${_dsl_cc} check no-such-file.ccl)
dsl_expect(check.bad-define RC 2 MATCH "the value must be an integer"
  CMD ${_dsl_cc} check ${_dsl_dir}/ring_allreduce.ccl -D ranks=four)

# Commands that take a schedule take a .ccl program with -D as well.
dsl_expect(verify.ccl RC 0 MATCH "OK: broadcast\\(ranks=8, chunks=1, root=3\\)"
  CMD ${_dsl_cc} verify ${_dsl_dir}/tree_broadcast.ccl -D ranks=8 -D root=3)
dsl_expect(verify.ccl-error RC 1
  MATCH "recursive_doubling_allgather.ccl:[0-9]+:1: error: assertion failed: recursive doubling needs a power-of-two number of ranks"
  CMD ${_dsl_cc} verify ${_dsl_dir}/recursive_doubling_allgather.ccl
      -D ranks=3)
# ... and report a refuted program at its statements.
dsl_expect(verify.ccl-refuted RC 3
  MATCH "verify-wrong-output.ccl:8:5: error: \\[wrong-output\\] rank 0 output chunk 0.*\n    copy\\(chunk\\(j, input, 0\\) -> chunk\\(r, output, ranks - 1 - j\\)\\)[;]\n    \\^"
  CMD ${_dsl_cc} verify ${_dsl_errors_dir}/verify-wrong-output.ccl)
dsl_expect(simulate.ccl RC 0
  MATCH "allreduce\\(ranks=8, chunks=8, inplace\\) on ring:8"
  CMD ${_dsl_cc} simulate ${_dsl_dir}/ring_allreduce.ccl -D ranks=8
      --topo ring:8 --sizes 1M)

# One test per error class: the diagnostic's file:line:col, source line,
# caret and exit code (see scripts/check_dsl_diagnostic.cmake).
file(GLOB _dsl_errors CONFIGURE_DEPENDS ${_dsl_errors_dir}/*.ccl)
foreach(_prog ${_dsl_errors})
  get_filename_component(_name ${_prog} NAME_WE)
  add_test(NAME e2e:dsl.error.${_name}
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:ccsynth> -DFILE=${_prog}
            -P ${CMAKE_CURRENT_LIST_DIR}/scripts/check_dsl_diagnostic.cmake)
endforeach()

# Switch operations: the NVLS example of docs/DSL.md proves on dgx-h100's
# switch, and compile (in builds with the compiler) refuses it at its first
# switch transfer's statement.
set(_dsl_nvls ${CCSYNTH_SOURCE_DIR}/test/dsl/doc-examples/nvls-allreduce.ccl)
dsl_expect(check.nvls-switch RC 0
  MATCH "allreduce\\(ranks=8, chunks=8\\) is implemented"
        "every transfer on a link or a switch port of dgx-h100"
        "transfers: 120 \\(0 copy, 0 reduce, 64 switch_reduce, 56 multicast\\)"
  CMD ${_dsl_cc} check ${_dsl_nvls} --topo dgx-h100)
if(CCSYNTH_ENABLE_MLIR)
  dsl_expect(compile.nvls-refused RC 1
    MATCH "nvls-allreduce.ccl:13:7: error: transfer #0 is a switch-reduce through switch 0, and MSCCL XML has no switch operations"
    CMD ${_dsl_cc} compile ${_dsl_nvls} -o ${_dsl_out}/never-written-nvls.xml)
endif()
