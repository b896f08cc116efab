# time-limit.cmake - `ccsynth synth --time-limit L` stops: it ends within
# three times L plus 10 s of wall time, and writes a verified schedule or
# an error naming the limit.
#
# The promise itself (L plus 10% of L, at least 2 s) is a timing claim and
# is measured by the benchmark bench/synth_time_limit.sh on an idle
# machine; here the bound only catches a limit that no longer bounds the
# work (the overruns it was written for took 8 to 183 s), with a margin
# that holds on a loaded 2-core machine.
#
# Runs `CC synth --topo TOPO --collective COLL --time-limit LIMIT -q -o
# WORKDIR/OUT` and measures its wall time. With WRITE=1 the run must write
# a schedule, which `CC verify` must accept; otherwise it may instead fail
# (exit 1) with an error naming the time limit and no output file.
set(out ${WORKDIR}/${OUT})
file(REMOVE ${out})
string(TIMESTAMP t0 "%s%f" UTC)
execute_process(
  COMMAND ${CC} synth --topo ${TOPO} --collective ${COLL}
          --time-limit ${LIMIT} -q -o ${out}
  WORKING_DIRECTORY ${WORKDIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
string(TIMESTAMP t1 "%s%f" UTC)
message("${stdout}${stderr}")
math(EXPR tookMs "(${t1} - ${t0}) / 1000")
math(EXPR allowedMs "${LIMIT} * 3000 + 10000")
message("wall time ${tookMs} ms, allowed ${allowedMs} ms, exit code ${rc}")
if(tookMs GREATER allowedMs)
  message(FATAL_ERROR "synth took ${tookMs} ms with --time-limit ${LIMIT}")
endif()
if("${rc}" STREQUAL "0")
  execute_process(COMMAND ${CC} verify ${out} WORKING_DIRECTORY ${WORKDIR}
    RESULT_VARIABLE vrc OUTPUT_VARIABLE vout ERROR_VARIABLE verr)
  message("${vout}${verr}")
  if(NOT "${vrc}" STREQUAL "0" OR NOT "${vout}" MATCHES "OK: ${COLL}")
    message(FATAL_ERROR "the written schedule does not verify")
  endif()
elseif(WRITE)
  message(FATAL_ERROR "exit code ${rc}: no schedule was written")
elseif(NOT "${rc}" STREQUAL "1" OR NOT "${stderr}" MATCHES "time limit")
  message(FATAL_ERROR "exit code ${rc} without an error naming the time limit")
elseif(EXISTS ${out})
  message(FATAL_ERROR "a failing synth left ${out} behind")
endif()
