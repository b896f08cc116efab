# End-to-end tests of the .ccl front end through the ccsynth CLI: `check`
# and `verify` on the shipped programs, schedule output, and every error
# class of test/dsl/errors (location, caret line and exit code).
set(_dsl_dir ${CCSYNTH_SOURCE_DIR}/sketches/dsl)

file(GLOB _dsl_programs CONFIGURE_DEPENDS ${_dsl_dir}/*.ccl)
foreach(_prog ${_dsl_programs})
  get_filename_component(_name ${_prog} NAME_WE)
  add_test(NAME e2e:dsl.check.${_name}
    COMMAND $<TARGET_FILE:ccsynth> check ${_prog})
  set_tests_properties(e2e:dsl.check.${_name} PROPERTIES
    PASS_REGULAR_EXPRESSION ": OK: .* is implemented")
endforeach()

add_test(NAME e2e:dsl.check.ring-16
  COMMAND $<TARGET_FILE:ccsynth> check ${_dsl_dir}/ring_allreduce.ccl -D ranks=16)
set_tests_properties(e2e:dsl.check.ring-16 PROPERTIES
  PASS_REGULAR_EXPRESSION "allreduce\\(ranks=16, chunks=16, inplace\\) is implemented")
add_test(NAME e2e:dsl.check.hierarchical-2x8
  COMMAND $<TARGET_FILE:ccsynth> check ${_dsl_dir}/hierarchical_allreduce.ccl
          -D nodes=2 -D gpus=8)
set_tests_properties(e2e:dsl.check.hierarchical-2x8 PROPERTIES
  PASS_REGULAR_EXPRESSION "parameters: nodes=2 gpus=8")
add_test(NAME e2e:dsl.verify.ccl
  COMMAND $<TARGET_FILE:ccsynth> verify ${_dsl_dir}/tree_broadcast.ccl
          -D ranks=8 -D root=3)
set_tests_properties(e2e:dsl.verify.ccl PROPERTIES
  PASS_REGULAR_EXPRESSION "OK: broadcast\\(ranks=8, chunks=1, root=3\\)")
add_test(NAME e2e:dsl.check.topology
  COMMAND $<TARGET_FILE:ccsynth> check ${_dsl_dir}/ring_allreduce.ccl
          -D ranks=8 --topo ring:8)
set_tests_properties(e2e:dsl.check.topology PROPERTIES
  PASS_REGULAR_EXPRESSION "every transfer on a link of")

# -o writes the schedule; `verify` then proves the JSON.
add_test(NAME e2e:dsl.check.output-then-verify
  COMMAND sh -c "rm -f dsl-out.json && \"$0\" check \"$1\" -D ranks=4 -o dsl-out.json -q && test -s dsl-out.json && \"$0\" verify dsl-out.json"
          $<TARGET_FILE:ccsynth> ${_dsl_dir}/allpairs_allreduce.ccl
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(e2e:dsl.check.output-then-verify PROPERTIES
  PASS_REGULAR_EXPRESSION "dsl-out.json: OK: allreduce\\(ranks=4")

# A program that does not verify exits 3 and writes no output file.
add_test(NAME e2e:dsl.check.no-output-when-refuted
  COMMAND sh -c "rm -f dsl-bad.json; \"$0\" check \"$1\" -o dsl-bad.json; rc=$?; test $rc -eq 3 && test ! -e dsl-bad.json"
          $<TARGET_FILE:ccsynth> ${CCSYNTH_SOURCE_DIR}/test/dsl/errors/verify-wrong-output.ccl
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

add_test(NAME e2e:dsl.check.not-a-program
  COMMAND $<TARGET_FILE:ccsynth> check ${CCSYNTH_SOURCE_DIR}/README.md)
set_tests_properties(e2e:dsl.check.not-a-program PROPERTIES WILL_FAIL TRUE)
add_test(NAME e2e:dsl.check.missing-file
  COMMAND sh -c "\"$0\" check no-such-file.ccl; test $? -eq 1"
          $<TARGET_FILE:ccsynth>)
add_test(NAME e2e:dsl.check.bad-define
  COMMAND sh -c "\"$0\" check \"$1\" -D ranks=four 2>&1; test $? -eq 1"
          $<TARGET_FILE:ccsynth> ${_dsl_dir}/ring_allreduce.ccl)
set_tests_properties(e2e:dsl.check.bad-define PROPERTIES
  PASS_REGULAR_EXPRESSION "the value must be an integer")

file(GLOB _dsl_errors CONFIGURE_DEPENDS
  ${CCSYNTH_SOURCE_DIR}/test/dsl/errors/*.ccl)
foreach(_prog ${_dsl_errors})
  get_filename_component(_name ${_prog} NAME_WE)
  add_test(NAME e2e:dsl.error.${_name}
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:ccsynth> -DFILE=${_prog}
            -P ${CMAKE_CURRENT_LIST_DIR}/scripts/check_dsl_diagnostic.cmake)
endforeach()

# Commands that take a schedule take a .ccl program with -D as well.
add_test(NAME e2e:dsl.simulate.ccl
  COMMAND $<TARGET_FILE:ccsynth> simulate ${_dsl_dir}/ring_allreduce.ccl
          -D ranks=8 --topo ring:8 --sizes 1M)
set_tests_properties(e2e:dsl.simulate.ccl PROPERTIES
  PASS_REGULAR_EXPRESSION "allreduce\\(ranks=8, chunks=8, inplace\\) on ring:8")
add_test(NAME e2e:dsl.verify.ccl-error
  COMMAND sh -c "\"$0\" verify \"$1\" -D ranks=3 2>&1; test $? -eq 1"
          $<TARGET_FILE:ccsynth> ${_dsl_dir}/recursive_doubling_allgather.ccl)
set_tests_properties(e2e:dsl.verify.ccl-error PROPERTIES
  PASS_REGULAR_EXPRESSION "recursive_doubling_allgather.ccl:[0-9]+:1: error: assertion failed: recursive doubling needs a power-of-two number of ranks")
