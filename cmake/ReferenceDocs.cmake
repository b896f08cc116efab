# ReferenceDocs.cmake: the pass and dialect reference pages
# (docs/reference/*.md), generated from the TableGen sources by
# mlir-tblgen, as MLIR's add_mlir_doc does. Run as a script:
#   cmake -DTBLGEN=mlir-tblgen -DSRC=<source dir> -DMLIR_INCLUDE=<dir>
#         -DMODE=check|write -P cmake/ReferenceDocs.cmake
# MODE=write rewrites the pages; MODE=check (the test docs:reference)
# fails when a page differs from what the .td files give.
set(pages
  "Passes.md|-gen-pass-doc|compiler/include/ccsynth/Dialect/CCL/Transforms/Passes.td"
  "CCLDialect.md|-gen-dialect-doc,-dialect=ccl|compiler/include/ccsynth/Dialect/CCL/IR/CCLOps.td")
set(failed "")
foreach(page IN LISTS pages)
  string(REPLACE "|" ";" fields "${page}")
  list(GET fields 0 name)
  list(GET fields 1 flags)
  list(GET fields 2 td)
  string(REPLACE "," ";" flags "${flags}")
  execute_process(
    COMMAND ${TBLGEN} ${flags} -I ${MLIR_INCLUDE} -I ${SRC}/compiler/include
            ${SRC}/${td}
    OUTPUT_VARIABLE generated
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mlir-tblgen failed on ${td}")
  endif()
  set(path ${SRC}/docs/reference/${name})
  if(MODE STREQUAL "write")
    file(WRITE ${path} "${generated}")
  else()
    file(READ ${path} committed)
    if(NOT committed STREQUAL generated)
      list(APPEND failed ${name})
    endif()
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "docs/reference/{${failed}} differ from the .td files: "
          "regenerate with cmake -DTBLGEN=${TBLGEN} -DSRC=${SRC} "
          "-DMLIR_INCLUDE=${MLIR_INCLUDE} -DMODE=write -P "
          "${SRC}/cmake/ReferenceDocs.cmake")
endif()
