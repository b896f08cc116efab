# End-to-end tests of `ccsynth compile` (needs the MLIR compiler).
if(CCSYNTH_ENABLE_MLIR)
  add_test(NAME e2e:compile-dsl-roundtrip
    COMMAND ${CMAKE_COMMAND} -DCC=$<TARGET_FILE:ccsynth>
      -DTRANSLATE=$<TARGET_FILE:ccsynth-translate> -DOPT=$<TARGET_FILE:ccsynth-opt>
      -DSRC=${CCSYNTH_SOURCE_DIR} -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/out
      -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/roundtrip-dsl.cmake)
  # Generated code grows with one rank's steps: symmetric ranks share.
  add_test(NAME e2e:codegen-rank-sharing
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/codegen-sharing.sh
      $<TARGET_FILE:ccsynth> ${CMAKE_CURRENT_BINARY_DIR}/codegen-sharing)
  # 127k one-chunk transfers fit MSCCL's and MSCCL++'s limits once each
  # hop's chunks are joined into multi-chunk steps.
  add_test(NAME e2e:compile-ring-alltoall-fits
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/ring-alltoall-fit.sh
      $<TARGET_FILE:ccsynth> ${CMAKE_CURRENT_BINARY_DIR}/ring-alltoall-fit)
endif()
