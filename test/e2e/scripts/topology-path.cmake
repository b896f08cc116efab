# A schedule's `topology` file is opened only under the schedule's own
# directory (or by built-in name): the writer records it relative to where
# the schedule is written, the readers find it there from any working
# directory, and a path outside (absolute, or through "..") is refused
# without being read.
#   -DCC=ccsynth -DWORKDIR=dir
include(${CMAKE_CURRENT_LIST_DIR}/run-in-workdir.cmake)

file(MAKE_DIRECTORY ${WORKDIR}/out/topos ${WORKDIR}/elsewhere)
run(0 ${CC} topo show dgx1 --json -o out/topos/mine.json)
run(0 ${CC} topo show dgx1 --json -o elsewhere/other.json)

# Under the schedule's directory: recorded from there, found from anywhere.
run(0 ${CC} baseline ring -c allgather -t out/topos/mine.json -o out/r.json)
file(READ ${WORKDIR}/out/r.json sched)
if(NOT sched MATCHES "\"topology\": \"topos/mine.json\"")
  message(FATAL_ERROR "the topology is not recorded from the schedule's directory")
endif()
run(0 ${CC} verify out/r.json)
run(0 ${CC} verify ${WORKDIR}/out/r.json)

# Outside it: recorded by its absolute path, named but not opened.
run(0 ${CC} baseline ring -c allgather -t elsewhere/other.json -o out/o.json)
file(READ ${WORKDIR}/out/o.json sched)
if(NOT sched MATCHES "\"topology\": \"/[^\"]*/elsewhere/other.json\"")
  message(FATAL_ERROR "a topology outside the schedule's directory is not recorded by its absolute path")
endif()
run(1 ${CC} verify out/o.json)
if(NOT output MATCHES "outside its own directory.*pass --topo /[^ ]*/elsewhere/other.json")
  message(FATAL_ERROR "a topology outside the schedule's directory was not refused")
endif()
run(0 ${CC} verify out/o.json --topo elsewhere/other.json)

# A hostile path: refused before anything is read (the message quotes no
# byte of the file).
file(READ ${WORKDIR}/out/r.json sched)
string(REPLACE "\"topology\": \"topos/mine.json\""
  "\"topology\": \"../../../../../../etc/passwd\"" hostile "${sched}")
file(WRITE ${WORKDIR}/out/hostile.json "${hostile}")
foreach(cmd verify simulate)
  run(1 ${CC} ${cmd} out/hostile.json)
  if(NOT output MATCHES "topology file '../../../../../../etc/passwd', outside its own directory" OR
     output MATCHES "root|malformed")
    message(FATAL_ERROR "${cmd} opened the hostile topology path")
  endif()
endforeach()
