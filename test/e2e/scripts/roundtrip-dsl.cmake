# Compiles every shipped .ccl program of a built-in collective to MSCCL XML
# at several sizes, recovers a schedule from the XML by symbolic execution
# (ccsynth-translate --import-msccl-xml) and proves it again
# (ccsynth-opt --ccl-verify-collective). Guards the whole compile pipeline,
# fusion included, against emitting XML that computes something else.
file(GLOB programs ${SRC}/sketches/dsl/*.ccl)
set(failures "")
set(checked 0)
foreach(p ${programs})
  get_filename_component(n ${p} NAME_WE)
  file(READ ${p} text)
  if(text MATCHES "collective [a-z_]+ *\\([^)]*\\) *{")
    continue() # custom collective: MSCCL's XML has no 'coll' for it
  endif()
  foreach(r 4 8 16)
    if(text MATCHES "param nodes")
      math(EXPR g "${r} / 2")
      set(defs -D nodes=2 -D gpus=${g})
    else()
      set(defs -D ranks=${r})
    endif()
    set(xml ${WORKDIR}/rt-${n}-${r}.xml)
    execute_process(COMMAND ${CC} compile ${p} ${defs} --target msccl-xml -o ${xml}
      RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
    if(NOT rc EQUAL 0)
      list(APPEND failures "${n} ${r}: compile: ${err}")
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
message("round-tripped ${checked} compiled programs")
if(checked LESS 20)
  message(FATAL_ERROR "too few programs checked (${checked})")
endif()
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
