# End-to-end tests of generated code on the host backend: every algorithm
# is built into a plugin and run with ranks as threads at three counts and
# three dtype/operator pairs, checked against the reference collective.
if(CCSYNTH_ENABLE_MLIR)
  set(run_script ${CMAKE_CURRENT_SOURCE_DIR}/scripts/run-algorithm.sh)
  # The plugins of these tests are built by clang where it is installed:
  # on the generated code of large synthesized schedules (megabytes of
  # straight-line source) it is about three times faster than GCC at -O0,
  # and building them is most of these tests' time. The other host plugin
  # tests (test/runtime, test/interposer, lit) build with `compile`'s
  # default compiler.
  find_program(CCSYNTH_TEST_PLUGIN_CXX NAMES clang++-19 clang++
    DOC "C++ compiler for the plugins of the e2e:run tests (empty: compile's default)")
  set(run_env)
  if(CCSYNTH_TEST_PLUGIN_CXX)
    set(run_env ENVIRONMENT CCSYNTH_TEST_PLUGIN_CXX=${CCSYNTH_TEST_PLUGIN_CXX})
  endif()
  set(run_cases)
  # Every shipped DSL program.
  file(GLOB dsl_programs CONFIGURE_DEPENDS ${CCSYNTH_SOURCE_DIR}/sketches/dsl/*.ccl)
  foreach(p ${dsl_programs})
    get_filename_component(n ${p} NAME_WE)
    list(APPEND run_cases "dsl-${n}=file:${p}")
  endforeach()
  # The baselines on dgx1 and dgx-h100x2.
  foreach(topo dgx1 dgx-h100x2)
    foreach(coll allgather reducescatter allreduce alltoall broadcast)
      list(APPEND run_cases "ring-${coll}-${topo}=baseline:ring:${coll}:${topo}"
                            "direct-${coll}-${topo}=baseline:direct:${coll}:${topo}")
    endforeach()
    list(APPEND run_cases "tree-allreduce-${topo}=baseline:tree:allreduce:${topo}"
                          "tree-broadcast-${topo}=baseline:tree:broadcast:${topo}")
  endforeach()
  foreach(coll allgather reducescatter allreduce alltoall)
    list(APPEND run_cases
      "hierarchical-${coll}-dgx-h100x2=baseline:hierarchical:${coll}:dgx-h100x2")
  endforeach()
  # Switch operations (NVLink SHARP) on dgx-h100: NCCL's NVLS algorithms,
  # the docs' NVLS AllReduce in the DSL, and synth's in-network mix (NVLS
  # on most of the buffer, a ring on the rest, at once); NVLS-tree on two
  # nodes, and synth's in-network output on four nodes without SHARP
  # (NVLS with rail rings).
  foreach(coll allgather reducescatter allreduce)
    list(APPEND run_cases "nvls-${coll}-dgx-h100=baseline:nvls:${coll}:dgx-h100")
  endforeach()
  list(APPEND run_cases
    "dsl-doc-nvls-allreduce=file:${CCSYNTH_SOURCE_DIR}/test/dsl/doc-examples/nvls-allreduce.ccl"
    "innet-allreduce-dgx-h100=innet:dgx-h100:allreduce"
    "nvls-allreduce-dgx-h100x2=baseline:nvls:allreduce:dgx-h100x2"
    "innet-allreduce-ndv5x4=innet:ndv5x4:allreduce")
  # Instances of one role sharing a function: the rings of dgx1, whose
  # order is no rank expression (positions from a table, the instance's
  # chunks and flags a term of its slot), and dgx-h100x2's, whose
  # instances are every other threadblock.
  list(APPEND run_cases "ring-allreduce-dgx1-x4=baseline:ring:allreduce:dgx1:x4"
    "ring-allgather-dgx-h100x2-x2=baseline:ring:allgather:dgx-h100x2:x2")
  # Synthesized schedules for every shipped sketch.
  file(GLOB sketches CONFIGURE_DEPENDS ${CCSYNTH_SOURCE_DIR}/sketches/*.json)
  foreach(s ${sketches})
    get_filename_component(topo ${s} NAME_WE)
    foreach(coll allgather reducescatter allreduce alltoall broadcast)
      list(APPEND run_cases "synth-${coll}-${topo}=synth:${topo}:${coll}")
    endforeach()
  endforeach()
  foreach(entry ${run_cases})
    string(REGEX REPLACE "=.*" "" name "${entry}")
    string(REGEX REPLACE "^[^=]*=" "" spec "${entry}")
    add_test(NAME e2e:run:${name}
      COMMAND ${run_script} $<TARGET_FILE:ccsynth> ${CCSYNTH_SOURCE_DIR}
              ${CMAKE_CURRENT_BINARY_DIR}/run/${name} ${spec})
    # COST: among the longest tests, started before the short ones.
    set_tests_properties(e2e:run:${name} PROPERTIES LABELS run TIMEOUT 1800
      COST 20 ${run_env})
  endforeach()
endif()
