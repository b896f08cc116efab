# The CLI's promises for every subcommand (README: exit codes and error
# format): --help exits 0, a usage error exits 2 whatever CLI11's own code
# for it, a missing input file exits 1 with `error:`; hostile inputs are
# clean errors; several outputs are written all or none; a schedule's
# topology is found and checked.
set(CLI_OUT ${CMAKE_CURRENT_BINARY_DIR}/out-cli)
file(MAKE_DIRECTORY ${CLI_OUT})
set(CLI_EXPECT ${CMAKE_CURRENT_SOURCE_DIR}/scripts/expect.cmake)
set(CLI_CC $<TARGET_FILE:ccsynth>)
set(CLI_NOFILE ${CLI_OUT}/no-such-file)
# A 4-rank ring AllGather that `run` builds and runs on the host.
set(CLI_RING4 ${CCSYNTH_SOURCE_DIR}/test/inputs/schedules/ring_allgather_4.json)

# cli_expect(NAME RC <code> [MATCH <regex>...] [NOMATCH <regex>] CMD <args...>)
function(cli_expect name)
  cmake_parse_arguments(E "" "RC;NOMATCH" "MATCH;CMD" ${ARGN})
  string(REPLACE ";" "\\;" match "${E_MATCH}")
  string(REPLACE ";" "\\;" cmd "${E_CMD}")
  add_test(NAME e2e:cli.${name}
    COMMAND ${CMAKE_COMMAND}
      -DCMD=${cmd} -DRC=${E_RC} -DMATCH=${match} -DNOMATCH=${E_NOMATCH}
      -DWORKDIR=${CLI_OUT} -P ${CLI_EXPECT})
endfunction()

# An empty value is refused for every option that takes one (it was
# taken as 0 or the default). A shell passes the empty argument, which a
# CMake list cannot hold.
cli_expect(empty-value-root RC 2
  MATCH "--root: an empty value" NOMATCH "wrote"
  CMD sh -c "\"$1\" baseline ring -c broadcast -t dgx1 --root '' -o \"$2\""
      sh ${CLI_CC} ${CLI_OUT}/b-empty-root.json)
cli_expect(empty-value-time-limit RC 2
  MATCH "--time-limit: an empty value" NOMATCH "wrote"
  CMD sh -c "\"$1\" synth -t dgx1 -c allgather --time-limit '' -o \"$2\""
      sh ${CLI_CC} ${CLI_OUT}/s-empty-limit.json)
cli_expect(empty-value-sizes RC 2
  MATCH "--sizes: an empty value"
  CMD sh -c "\"$1\" simulate \"$2\" --sizes ''" sh ${CLI_CC} ${CLI_NOFILE}.json)

# One row per subcommand: its name (dots for nested ones), the arguments of
# a run whose input file is missing, and a usage error beyond an unknown
# option (a missing required argument, a bad or out-of-range number, or a
# bad option value) where it has one.
set(rows
  "topo.list||"
  "topo.show|topo show ${CLI_NOFILE}.json|topo show"
  "topo.import|topo import ${CLI_NOFILE}.xml|topo import x.xml --nodes 0"
  "baseline|baseline ring -c allgather -t ${CLI_NOFILE}.json -o ${CLI_OUT}/b.json|baseline ring -c allgather -t dgx1 -o ${CLI_OUT}/b.json --pipeline 99"
  "verify|verify ${CLI_NOFILE}.json|verify ${CLI_NOFILE}.ccl -D ranks=four"
  "simulate|simulate ${CLI_NOFILE}.json|simulate ${CLI_NOFILE}.json --sizes 1K,12Q"
  "synth|synth -t dgx1 -k ${CLI_NOFILE}.json -c allgather -o ${CLI_OUT}/s.json|synth -t dgx1 -c allgather -o ${CLI_OUT}/s.json --chunks abc"
  "check|check ${CLI_NOFILE}.ccl|check"
  "plugin.info|plugin info ${CLI_NOFILE}.so|plugin info"
)
if(CCSYNTH_ENABLE_MLIR)
  list(APPEND rows
    "compile|compile ${CLI_NOFILE}.json -o ${CLI_OUT}/c.xml|compile ${CLI_NOFILE}.json --target nccl -o ${CLI_OUT}/c.xml"
    "run|run ${CLI_NOFILE}.json --size 1M|run ${CLI_NOFILE}.json --size 1M --dtype fp33")
  cli_expect(run.bad-ranks-as RC 2
    MATCH "unknown --ranks-as 'cores'.*threads or processes"
    CMD ${CLI_CC} run ${CLI_NOFILE}.json --size 1M --ranks-as cores)
  cli_expect(run.cuda-processes RC 2
    MATCH "--ranks-as processes is for the host backend"
    CMD ${CLI_CC} run ${CLI_NOFILE}.json --size 1M --backend cuda
        --ranks-as processes)
  cli_expect(run.cuda-flags-on-host RC 2
    MATCH "--device, --cuda-arch and --nvcc need --backend cuda"
    CMD ${CLI_CC} run ${CLI_NOFILE}.json --size 1M --cuda-arch 90)
  # Seconds: NaN, inf, a negative number or more than a day is no
  # watchdog (one once printed "did not finish within -2147483648 s").
  foreach(bad nan inf 1e300 -1 0 86401)
    cli_expect(run.timeout-${bad} RC 2
      MATCH "--timeout [-+0-9a-z.]+: expected seconds above 0 and at most 86400"
      NOMATCH "building"
      CMD ${CLI_CC} run ${CLI_RING4}
          --count 4 --timeout ${bad})
  endforeach()
  # A count out of range is a usage error before anything is built; one
  # whose buffers exceed the machine's memory is refused before they are
  # allocated (not "out of host memory", nor an internal error).
  cli_expect(run.count-out-of-range RC 2
    MATCH "--count '99999999999999999999' is out of range: at most 9223372036854775807"
    NOMATCH "building"
    CMD ${CLI_CC} run ${CLI_RING4}
        --count 99999999999999999999)
  cli_expect(run.count-not-a-number RC 2
    MATCH "--count '12e3': expected a whole number of elements"
    NOMATCH "building"
    CMD ${CLI_CC} run ${CLI_RING4}
        --count 12e3)
  cli_expect(run.size-out-of-range RC 2
    MATCH "--size: size '999999999999999G' is out of range"
    NOMATCH "building"
    CMD ${CLI_CC} run ${CLI_RING4}
        --size 999999999999999G)
  cli_expect(run.count-beyond-memory RC 2
    MATCH "count 4000000000000 of fp32 needs about [0-9.]+ GiB of host memory \\(4 ranks' inputs, buffers and scratch\\), more than this machine's"
    NOMATCH "out of host memory|internal error"
    CMD ${CLI_CC} run ${CLI_RING4}
        --count 4000000000000)
  # The tile is checked whatever the input, and refused for a built
  # plugin (its tile is compiled in) rather than ignored.
  cli_expect(run.tile-bytes-of-built-plugin RC 2
    MATCH "--tile-bytes applies when run builds the plugin from a schedule"
    CMD ${CLI_CC} run ${CLI_NOFILE}.so --size 1M --tile-bytes 64K)
  foreach(bad abc -1 nan inf 1e309 24)
    cli_expect(run.tile-bytes-${bad} RC 2
      MATCH "--tile-bytes '${bad}': expected a positive multiple of 16 bytes"
      NOMATCH "building"
      CMD ${CLI_CC} run ${CLI_RING4}
          --size 1M --tile-bytes ${bad})
  endforeach()
  # A size below one element per chunk would run nothing and call it
  # correct.
  cli_expect(run.size-below-one-element RC 2
    MATCH "--size 3 bytes holds no element of fp32 per chunk of allgather's larger buffer: give at least 16 bytes"
    NOMATCH "correct"
    CMD ${CLI_CC} run ${CLI_RING4}
        --size 3)
  cli_expect(run.cuda-bad-arch RC 2
    MATCH "--cuda-arch 'sm_90': expected an SM version"
    CMD ${CLI_CC} run ${CLI_NOFILE}.json --size 1M --backend cuda
        --cuda-arch sm_90)
  # What runs is proven first, links included, as compile and verify do:
  # a transfer on a link the topology lacks is exit 3, before any build.
  cli_expect(run.bad-link RC 3
    MATCH "bad-link.json:8:5: error: \\[bad-link\\] transfer #2"
    NOMATCH "building"
    CMD ${CLI_CC} run ${CCSYNTH_SOURCE_DIR}/test/lit/CLI/Inputs/bad-link.json
        --count 4)
  cli_expect(run.bad-link-mlir RC 3
    MATCH "bad-link.mlir:6:5: error: \\[bad-link\\] transfer #2"
    NOMATCH "building"
    CMD ${CLI_CC} run ${CCSYNTH_SOURCE_DIR}/test/lit/CLI/Inputs/bad-link.mlir
        --count 4)
  # Without a GPU: exit 5 and "no CUDA device", nothing else; with one, a
  # 4-rank ring AllGather that matches the reference.
  add_test(NAME e2e:cli.run.cuda
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/run-cuda.sh ${CLI_CC}
            ${CLI_OUT}/run-cuda source)
  set_tests_properties(e2e:cli.run.cuda PROPERTIES TIMEOUT 900)
endif()
foreach(row ${rows})
  string(REPLACE "|" ";" fields "${row}")
  list(GET fields 0 name)
  list(GET fields 1 missing)
  list(GET fields 2 bad)
  string(REPLACE "." ";" words "${name}")
  cli_expect(${name}.help RC 0 MATCH "Usage:" CMD ${CLI_CC} ${words} --help)
  cli_expect(${name}.unknown-option RC 2
    MATCH "ccsynth: error: " "--help"
    CMD ${CLI_CC} ${words} --no-such-option)
  if(missing)
    separate_arguments(args UNIX_COMMAND "${missing}")
    cli_expect(${name}.missing-input RC 1 MATCH "error: .*no-such-file"
      CMD ${CLI_CC} ${args})
  endif()
  if(bad)
    separate_arguments(args UNIX_COMMAND "${bad}")
    cli_expect(${name}.bad-usage RC 2 MATCH "ccsynth: error: " CMD ${CLI_CC} ${args})
  endif()
endforeach()
foreach(bad nan inf 1e300 -1 604801)
  cli_expect(synth.time-limit-${bad} RC 2
    MATCH "--time-limit [-+0-9a-z.]+: expected seconds from 0 to 604800"
    CMD ${CLI_CC} synth -t ring:4 -c allgather -o ${CLI_OUT}/t.json
        --time-limit=${bad})
endforeach()
cli_expect(no-subcommand RC 2 MATCH "ccsynth: error: A subcommand is required"
  CMD ${CLI_CC})
cli_expect(topo.no-subcommand RC 2 MATCH "ccsynth: error: " CMD ${CLI_CC} topo)
cli_expect(version RC 0 MATCH "ccsynth [0-9]" CMD ${CLI_CC} --version)

# Hostile inputs: deep nesting, directories, FIFOs, endless devices and
# allocation failure (each made in the test's own directory).
set(CLI_OPT "")
set(CLI_TRANSLATE "")
if(CCSYNTH_ENABLE_MLIR)
  set(CLI_OPT $<TARGET_FILE:ccsynth-opt>)
  set(CLI_TRANSLATE $<TARGET_FILE:ccsynth-translate>)
endif()
add_test(NAME e2e:cli.hostile-inputs
  COMMAND ${CMAKE_COMMAND} -DCC=${CLI_CC} -DOPT=${CLI_OPT}
    -DTRANSLATE=${CLI_TRANSLATE}
    -DSANITIZED=${CCSYNTH_SANITIZE} -DWORKDIR=${CLI_OUT}/hostile
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/hostile-inputs.cmake)
# Inputs whose cost used to grow with their values or with the square of
# their size (a huge count, 40,000 unknown keys, 100,000 symmetry entries).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME e2e:cli.costly-inputs
  COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/scripts/costly-inputs.py ${CLI_CC}
    ${CLI_OUT}/costly)
set_tests_properties(e2e:cli.costly-inputs PROPERTIES TIMEOUT 900)
cli_expect(degenerate-bandwidth RC 1
  MATCH "subnormal-topo.json:6:[0-9]+: error: bandwidth 4.94066e-324 GB/s is out of range: it must be from 0.001 to 1000000 GB/s" "\\^"
  CMD ${CLI_CC} topo show ${CMAKE_CURRENT_SOURCE_DIR}/inputs/subnormal-topo.json)
# Figures outside the physical range (docs/formats.md) are refused where
# they are written: a 1e308 us alpha or a 1e-300 GB/s link once made
# `simulate` print inf and -nan% with exit 0.
cli_expect(huge-alpha RC 1
  MATCH "huge-alpha-topo.json:5:[0-9]+: error: alpha 1e\\+308 us is out of range: it must be 0, or from 0.000001 to 1000000 us" "\\^"
  NOMATCH "busbw"
  CMD ${CLI_CC} simulate ${CLI_RING4}
      -t ${CMAKE_CURRENT_SOURCE_DIR}/inputs/huge-alpha-topo.json)
cli_expect(tiny-bandwidth RC 1
  MATCH "tiny-bandwidth-topo.json:9:[0-9]+: error: bandwidth 1e-300 GB/s is out of range" "\\^"
  CMD ${CLI_CC} baseline ring -c allreduce
      -t ${CMAKE_CURRENT_SOURCE_DIR}/inputs/tiny-bandwidth-topo.json
      -o ${CLI_OUT}/tiny-bandwidth.json)
cli_expect(alpha-flag-range RC 2
  MATCH "--net-alpha 1e\\+300 is out of range"
  CMD ${CLI_CC} topo import
    ${CCSYNTH_SOURCE_DIR}/sketches/topologies/nccl-dgx-a100.xml
    --net-alpha 1e300)
cli_expect(topo-profile-range RC 1
  MATCH "topo-ndv2-1MB.json:[0-9]+:[0-9]+: error: alpha 0.3 gives a latency of 3e\\+299 us, out of range"
  CMD ${CLI_CC} topo show ndv2x2 --topo-profile
      ${CCSYNTH_SOURCE_DIR}/test/inputs/taccl-topo/topo-ndv2-1MB.json
      --topo-profile-scale 1e-300)
# What an NCCL dump lacks and the importer assumes (or ignores) is said at
# the element, not silently taken.
cli_expect(import-assumptions RC 0
  MATCH "nic-without-speed.xml:13:9: warning: NIC speed -1 Mb/s is no speed: assumed 10000 Mb/s \\(1.25 GB/s\\), as NCCL does"
        "nic-without-speed.xml:5:9: warning: NVLink with count 0 carries nothing: ignored"
        "1.25 GB/s"
  CMD ${CLI_CC} topo import ${CMAKE_CURRENT_SOURCE_DIR}/inputs/nic-without-speed.xml
      --nodes 2)
cli_expect(import-json RC 1
  MATCH "bad-topo.json:1:1: error: 'topo import' reads NCCL topology dumps"
  CMD ${CLI_CC} topo import ${CMAKE_CURRENT_SOURCE_DIR}/inputs/bad-topo.json)
cli_expect(bad-alpha-flag RC 2 MATCH "--nvlink-alpha 4.94066e-324 is out of range"
  CMD ${CLI_CC} topo import
    ${CCSYNTH_SOURCE_DIR}/sketches/topologies/nccl-dgx-a100.xml
    --nvlink-alpha 5e-324)

# Several outputs: all or none; the SIGINT/SIGTERM cleanup of temporaries is
# covered by CoreTests ("a signal removes the temporaries ...").
add_test(NAME e2e:cli.outputs-all-or-none
  COMMAND ${CMAKE_COMMAND} -DCC=${CLI_CC} -DWORKDIR=${CLI_OUT}/outputs
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/outputs-all-or-none.cmake)

# A schedule made from a topology file finds that file again and notices
# when it changed.
add_test(NAME e2e:cli.topology-identity
  COMMAND ${CMAKE_COMMAND} -DCC=${CLI_CC} -DWORKDIR=${CLI_OUT}/identity
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/topology-identity.cmake)
# A schedule opens its topology file only under its own directory.
add_test(NAME e2e:cli.topology-path
  COMMAND ${CMAKE_COMMAND} -DCC=${CLI_CC} -DWORKDIR=${CLI_OUT}/topology-path
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/topology-path.cmake)

# --topo-profile: TACCL's profile files as shipped on built-in shapes, and
# located errors for a profile that does not fit the shape.
set(CLI_TACCL ${CCSYNTH_SOURCE_DIR}/test/inputs/taccl-topo)
cli_expect(topo-profile-ndv2 RC 0
  MATCH "alpha 0\\.3 us +43\\.4783 GB/s" "alpha 2\\.6 us +9\\.52381 GB/s"
        "TACCL topology profile 'NDv2_1MB'"
  CMD ${CLI_CC} topo show ndv2x2 --topo-profile ${CLI_TACCL}/topo-ndv2-1MB.json)
cli_expect(topo-profile-units RC 0
  MATCH "alpha 0\\.3 us +100 GB/s"
  CMD ${CLI_CC} topo show dgx2x2 --topo-profile ${CLI_TACCL}/topo-dgx2-1KB.json
      --topo-profile-mb 0.001 --topo-profile-scale 100)
cli_expect(topo-profile-mismatch RC 1
  MATCH "topo-dgx2-1MB.json:3:[0-9]+: error: gpus_per_node is 16 but nodes of 'ndv2x2' have 8"
  CMD ${CLI_CC} topo show ndv2x2 --topo-profile ${CLI_TACCL}/topo-dgx2-1MB.json)
cli_expect(topo-profile-baseline RC 0 MATCH "wrote"
  CMD ${CLI_CC} baseline ring --collective allgather --topo dgx2x2
      --topo-profile ${CLI_TACCL}/topo-dgx2-1MB.json -o ${CLI_OUT}/ring-profiled.json)
