# A command with several outputs writes all of them or none.
#   -DCC=ccsynth -DWORKDIR=dir
include(${CMAKE_CURRENT_LIST_DIR}/run-in-workdir.cmake)
function(absent f)
  if(EXISTS ${WORKDIR}/${f})
    message(FATAL_ERROR "${f} was written although another output failed")
  endif()
endfunction()

run(0 ${CC} baseline ring -c allgather -t fc:4 -o r.json)
# The plot's directory does not exist: no timeline either.
run(1 ${CC} simulate r.json --timeline tl.svg --plot missing-dir/plot.svg)
absent(tl.svg)
if(NOT output MATCHES "cannot write 'missing-dir/plot.svg'")
  message(FATAL_ERROR "the error does not name the plot")
endif()
run(1 ${CC} simulate r.json --timeline missing-dir/tl.svg --plot plot.svg)
absent(plot.svg)
# Both writable: both written.
run(0 ${CC} simulate r.json --timeline tl.svg --plot plot.svg)
foreach(f tl.svg plot.svg)
  if(NOT EXISTS ${WORKDIR}/${f})
    message(FATAL_ERROR "${f} was not written")
  endif()
endforeach()
# synth: the schedule is not written when the SMT dump cannot be.
run(1 ${CC} synth -t fc:4 -c allgather -o s.json --dump-smt missing-dir/x.smt2
  --time-limit 20 -q)
absent(s.json)
# No temporary is left anywhere.
file(GLOB_RECURSE left ${WORKDIR}/*.tmp.*)
if(left)
  message(FATAL_ERROR "temporaries left behind: ${left}")
endif()
