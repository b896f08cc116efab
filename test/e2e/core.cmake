# End-to-end tests of the foundation CLI: topo, baseline, verify, simulate.
# expect.cmake runs a command and checks its exit code and output.
set(CCSYNTH_EXPECT ${CMAKE_CURRENT_SOURCE_DIR}/scripts/expect.cmake)
set(E2E_OUT ${CMAKE_CURRENT_BINARY_DIR}/out)
file(MAKE_DIRECTORY ${E2E_OUT})

# ccsynth_expect(NAME RC <code> [MATCH <regex>...] [NOMATCH <regex>] [FILE <path>]
#                CMD <args...>)
function(ccsynth_expect name)
  cmake_parse_arguments(E "" "RC;FILE;NOMATCH" "MATCH;CMD" ${ARGN})
  string(REPLACE ";" "\\;" match "${E_MATCH}")
  string(REPLACE ";" "\\;" cmd "${E_CMD}")
  add_test(NAME e2e:${name}
    COMMAND ${CMAKE_COMMAND}
      -DCMD=${cmd} -DRC=${E_RC} -DMATCH=${match} -DNOMATCH=${E_NOMATCH}
      -DFILE=${E_FILE} -DWORKDIR=${E2E_OUT}
      -P ${CCSYNTH_EXPECT})
endfunction()

set(CC $<TARGET_FILE:ccsynth>)

ccsynth_expect(topo-list RC 0 MATCH "dgx-h100\\[xN\\]" CMD ${CC} topo list)
ccsynth_expect(topo-show RC 0 MATCH "16 ranks in 2 nodes" "rdma"
  "step model \\(Simple/LL128/LL\\): launch 8.4/14/6.6 us"
  CMD ${CC} topo show dgx-a100x2)
ccsynth_expect(topo-unknown RC 1
  MATCH "error: unknown topology 'dgx-z'" "valid built-in topologies" "dgx-h100\\[xN\\]"
  CMD ${CC} topo show dgx-z)
ccsynth_expect(topo-malformed-json RC 1
  MATCH "bad-topo.json:3:[0-9]+: error: malformed JSON"
  CMD ${CC} topo show ${CMAKE_CURRENT_SOURCE_DIR}/inputs/bad-topo.json)
ccsynth_expect(topo-bad-link RC 1
  MATCH "bad-link-topo.json:5:[0-9]+: error: rank 9 is not in 0..1"
  CMD ${CC} topo show ${CMAKE_CURRENT_SOURCE_DIR}/inputs/bad-link-topo.json)
ccsynth_expect(schedule-malformed-json RC 1
  MATCH "bad-schedule.json:[0-9]+:[0-9]+: error: malformed JSON" "\\^"
  CMD ${CC} verify ${CMAKE_CURRENT_SOURCE_DIR}/inputs/bad-schedule.json)
ccsynth_expect(schedule-bad-field RC 1
  MATCH "bad-field-schedule.json:6:[0-9]+: error: unknown op 'send'"
  CMD ${CC} verify ${CMAKE_CURRENT_SOURCE_DIR}/inputs/bad-field-schedule.json)
ccsynth_expect(verify-missing-file RC 1 MATCH "cannot open"
  CMD ${CC} verify ${E2E_OUT}/does-not-exist.json)
# A root is refused where the collective has none (it would be carried
# along, meaning nothing).
ccsynth_expect(schedule-root-on-unrooted RC 1
  MATCH "root-on-allgather.json:7:[0-9]+: error: 'root' is for the rooted collectives \\(broadcast, reduce, gather, scatter\\); allgather has none"
  CMD ${CC} verify ${CMAKE_CURRENT_SOURCE_DIR}/inputs/root-on-allgather.json)
# A topology file that is a symlink loop is named as one, not as missing.
file(CREATE_LINK loop-b.json ${E2E_OUT}/loop-a.json SYMBOLIC)
file(CREATE_LINK loop-a.json ${E2E_OUT}/loop-b.json SYMBOLIC)
ccsynth_expect(topo-symlink-loop RC 1
  MATCH "cannot open topology file '[^']*loop-a.json': Too many levels of symbolic links"
  CMD ${CC} topo show ${E2E_OUT}/loop-a.json)

# The foundation acceptance flow: ring allreduce on dgx-h100x2 verifies; a
# deleted transfer or a duplicated reduction is named.
ccsynth_expect(baseline-ring-h100x2 RC 0 FILE ring-ar-h100x2.json
  CMD ${CC} baseline ring --collective allreduce --topo dgx-h100x2
      -o ${E2E_OUT}/ring-ar-h100x2.json)
ccsynth_expect(verify-ring-h100x2 RC 0 MATCH "OK: allreduce"
  CMD ${CC} verify ${E2E_OUT}/ring-ar-h100x2.json)
set_tests_properties(e2e:verify-ring-h100x2 PROPERTIES DEPENDS e2e:baseline-ring-h100x2)
add_test(NAME e2e:verify-deleted-transfer
  COMMAND ${CMAKE_COMMAND} -DCC=${CC} -DWORKDIR=${E2E_OUT} -DMODE=delete
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/mutate-schedule.cmake)
add_test(NAME e2e:verify-duplicated-reduction
  COMMAND ${CMAKE_COMMAND} -DCC=${CC} -DWORKDIR=${E2E_OUT} -DMODE=duplicate
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/mutate-schedule.cmake)
set_tests_properties(e2e:verify-deleted-transfer e2e:verify-duplicated-reduction
  PROPERTIES DEPENDS e2e:baseline-ring-h100x2)

# Schedules of hundreds of ranks exceed the 64 MiB other inputs may have:
# the 256-rank ring ReduceScatter is 1.04M transfers, 92 MB. verify and
# simulate read what baseline wrote (without a DOM, in seconds).
ccsynth_expect(baseline-large-schedule RC 0 FILE large-rs-h100x32.json
  CMD ${CC} baseline ring --collective reducescatter --topo dgx-h100x32
      -o ${E2E_OUT}/large-rs-h100x32.json)
ccsynth_expect(verify-large-schedule RC 0
  MATCH "OK: reducescatter\\(ranks=256, chunks=8\\), 1044480 transfers"
  CMD ${CC} verify ${E2E_OUT}/large-rs-h100x32.json)
ccsynth_expect(simulate-large-schedule RC 0 MATCH "1G +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+%"
  CMD ${CC} simulate ${E2E_OUT}/large-rs-h100x32.json --sizes 1G)
set_tests_properties(e2e:verify-large-schedule e2e:simulate-large-schedule
  PROPERTIES DEPENDS e2e:baseline-large-schedule)

# Simulation of the ring on one DGX A100 at 1 GB: busbw within 10% of the
# ring's analytic value (the 300 GB/s NVSwitch port) and a % of bound.
ccsynth_expect(baseline-ring-a100 RC 0
  CMD ${CC} baseline ring --collective allreduce --topo dgx-a100
      -o ${E2E_OUT}/ring-ar-a100.json)
ccsynth_expect(simulate-ring-a100 RC 0
  MATCH "1G +[0-9.]+ +[0-9.]+ +(2[7-9][0-9]|3[0-2][0-9])\\.[0-9]+ +[0-9.]+ +[0-9.]+%"
  CMD ${CC} simulate ${E2E_OUT}/ring-ar-a100.json --sizes 1K,1M,1G
      --plot ${E2E_OUT}/ring-a100.svg --timeline ${E2E_OUT}/ring-a100-tl.svg
      --timeline-size 1M)
set_tests_properties(e2e:simulate-ring-a100 PROPERTIES DEPENDS e2e:baseline-ring-a100)
ccsynth_expect(simulate-bad-size RC 2 MATCH "bad size '12Q'"
  CMD ${CC} simulate ${E2E_OUT}/ring-ar-a100.json --sizes 1K,12Q)
set_tests_properties(e2e:simulate-bad-size PROPERTIES DEPENDS e2e:baseline-ring-a100)
ccsynth_expect(baseline-unsupported RC 1 MATCH "hierarchical"
  CMD ${CC} baseline hierarchical --collective allreduce --topo dgx1
      -o ${E2E_OUT}/never-written.json)

# NCCL topology dump import.
ccsynth_expect(topo-import-nccl RC 0 MATCH "16 ranks in 2 nodes" "nvlink" "rdma"
  CMD ${CC} topo import ${CCSYNTH_SOURCE_DIR}/sketches/topologies/nccl-dgx-a100.xml
      --nodes 2)
ccsynth_expect(topo-show-nccl RC 0 MATCH "8 ranks in 1 node"
  CMD ${CC} topo show ${CCSYNTH_SOURCE_DIR}/sketches/topologies/nccl-dgx-a100.xml)
