# Compiles every shipped .ccl program to MSCCL XML at several sizes,
# recovers a schedule from the XML by symbolic execution and proves it
# again. Guards the whole compile pipeline, fusion included, against
# emitting XML that computes something else. Built-in collectives go
# through ccsynth-translate --import-msccl-xml | ccsynth-opt
# --ccl-verify-collective; a custom collective (which the XML knows only by
# the NCCL call that launches it, named by the `--msccl-coll C` of the
# program's header comment) through ccsynth compile --check-roundtrip, which
# proves the recovered schedule against the program's own postcondition.
file(GLOB programs ${SRC}/sketches/dsl/*.ccl)
set(failures "")
set(checked 0)
set(customs 0)
set(switched 0)
foreach(p ${programs})
  get_filename_component(n ${p} NAME_WE)
  file(READ ${p} text)
  # Switch operations lower to generated code only: MSCCL XML must refuse
  # them at their statement, generated code must take them (the host
  # backend runs them: e2e:run:dsl-*).
  if(text MATCHES "switch_reduce\\(|multicast\\(")
    execute_process(COMMAND ${CC} compile ${p} --target msccl-xml
      -o ${WORKDIR}/rt-${n}.xml
      RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
    if(rc EQUAL 0 OR NOT err MATCHES "${n}.ccl:[0-9]+:[0-9]+: error: .*MSCCL XML has no switch operations")
      list(APPEND failures "${n}: MSCCL XML did not refuse its switch operations: ${err}")
    endif()
    execute_process(COMMAND ${CC} compile ${p} --target cuda --no-tune
      -o ${WORKDIR}/rt-${n}.cu
      RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
    if(NOT rc EQUAL 0)
      list(APPEND failures "${n}: generated code: ${err}")
    endif()
    math(EXPR switched "${switched} + 1")
    continue()
  endif()
  set(custom "")
  if(text MATCHES "collective [a-z_]+ *\\([^)]*\\) *{")
    if(NOT text MATCHES "--msccl-coll ([a-z]+)")
      list(APPEND failures "${n}: a custom collective without --msccl-coll in its header")
      continue()
    endif()
    set(custom --msccl-coll ${CMAKE_MATCH_1} --check-roundtrip)
    math(EXPR customs "${customs} + 1")
  endif()
  foreach(r 4 8 16)
    if(text MATCHES "param nodes")
      math(EXPR g "${r} / 2")
      set(defs -D nodes=2 -D gpus=${g})
    else()
      set(defs -D ranks=${r})
    endif()
    set(xml ${WORKDIR}/rt-${n}-${r}.xml)
    execute_process(COMMAND ${CC} compile ${p} ${defs} --target msccl-xml ${custom} -o ${xml}
      RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
    if(NOT rc EQUAL 0)
      list(APPEND failures "${n} ${r}: compile: ${err}")
      continue()
    endif()
    if(custom)
      math(EXPR checked "${checked} + 1")
      continue()
    endif()
    execute_process(COMMAND ${TRANSLATE} --import-msccl-xml ${xml}
      COMMAND ${OPT} --ccl-verify-collective
      RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
    if(NOT rc EQUAL 0)
      list(APPEND failures "${n} ${r}: round trip: ${err}")
    endif()
    math(EXPR checked "${checked} + 1")
  endforeach()
endforeach()
message("round-tripped ${checked} compiled programs (${customs} custom collectives); ${switched} with switch operations compiled to generated code")
if(checked LESS 20 OR customs LESS 2)
  message(FATAL_ERROR "too few programs checked (${checked})")
endif()
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
