# A schedule made from a topology FILE records the path and a content hash:
# a later simulate without --topo finds that file (not a built-in of the
# same name) and refuses it once its figures changed.
#   -DCC=ccsynth -DWORKDIR=dir
include(${CMAKE_CURRENT_LIST_DIR}/run-in-workdir.cmake)

# A file whose machine is called "dgx1" but has 1 GB/s links.
run(0 ${CC} topo show dgx1 --json -o dgx1-slow.json)
file(READ ${WORKDIR}/dgx1-slow.json topo)
string(REGEX REPLACE "\"bandwidth_gbps\": ?[0-9.e+]+" "\"bandwidth_gbps\": 1"
  slow "${topo}")
file(WRITE ${WORKDIR}/dgx1-slow.json "${slow}")

run(0 ${CC} baseline ring -c allgather -t dgx1-slow.json -o r.json)
file(READ ${WORKDIR}/r.json sched)
if(NOT sched MATCHES "\"topology\": \"dgx1-slow.json\"" OR
   NOT sched MATCHES "\"topology_hash\": \"[0-9a-f]+\"" OR
   NOT sched MATCHES "\"version\": 3")
  message(FATAL_ERROR "the schedule does not record the topology file")
endif()
# Simulated on the file's 1 GB/s links: 1G takes over 100 ms (about 235;
# the built-in dgx1 takes about 6).
run(0 ${CC} simulate r.json --sizes 1G)
if(NOT output MATCHES "1G +[0-9][0-9][0-9][0-9][0-9][0-9]+\\.[0-9]+ ")
  message(FATAL_ERROR "not simulated on the file's links")
endif()

# The file changes: refused without --topo, accepted with it.
string(REPLACE "\"bandwidth_gbps\": 1" "\"bandwidth_gbps\": 2" faster "${slow}")
file(WRITE ${WORKDIR}/dgx1-slow.json "${faster}")
run(1 ${CC} simulate r.json --sizes 1G)
if(NOT output MATCHES "error: topology 'dgx1-slow.json' is not the one the schedule was made for")
  message(FATAL_ERROR "the changed topology was not noticed")
endif()
run(1 ${CC} verify r.json)
run(0 ${CC} simulate r.json --sizes 1G --topo dgx1-slow.json)

# Schedule format version 2 recorded another hash (FNV-1a 64 of the
# canonical JSON without the step model); its files still check against
# it. d046237c71749f43 is that hash of the built-in dgx1.
run(0 ${CC} baseline ring -c allgather -t dgx1 -o b.json)
file(READ ${WORKDIR}/b.json sched)
string(REGEX REPLACE "\"topology_hash\": \"[0-9a-f]+\""
  "\"topology_hash\": \"d046237c71749f43\"" v2hash "${sched}")
string(REPLACE "\"version\": 3" "\"version\": 2" v2 "${v2hash}")
file(WRITE ${WORKDIR}/v2.json "${v2}")
run(0 ${CC} verify v2.json)
# The same hash in a version 3 file is not the topology's.
file(WRITE ${WORKDIR}/v3-wrong.json "${v2hash}")
run(1 ${CC} verify v3-wrong.json)
if(NOT output MATCHES "is not the one the schedule was made for")
  message(FATAL_ERROR "a version 3 file was checked against the version 2 hash")
endif()
