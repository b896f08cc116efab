# Included by the e2e scripts that run several commands in a fresh WORKDIR:
# makes it empty, and defines run(rc cmd...), which runs cmd there, prints
# it with its exit code and output, fails unless it exits with rc, and sets
# `output` (stdout and stderr) in the caller.
file(REMOVE_RECURSE ${WORKDIR})
file(MAKE_DIRECTORY ${WORKDIR})

function(run rc)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORKDIR}
    RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${ARGN}: exit ${got}\n${out}${err}")
  if(NOT "${got}" STREQUAL "${rc}")
    message(FATAL_ERROR "exit code ${got}, expected ${rc}")
  endif()
  set(output "${out}${err}" PARENT_SCOPE)
endfunction()
