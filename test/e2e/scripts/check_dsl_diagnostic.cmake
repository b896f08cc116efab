# Runs `ccsynth check FILE` on a test/dsl/errors program and checks what the
# program's header comments expect:
#   // ERROR: LINE:COL: message     the error location and (part of) its text
#   // ARGS: -D name=value ...      optional extra arguments
#   // EXIT: N                      optional exit code (default 1)
# The diagnostic must read `FILE:LINE:COL: error: ...`, be followed by the
# source line and a caret under COL, and the exit code must match.
# Usage: cmake -DEXE=<ccsynth> -DFILE=<program.ccl> -P check_dsl_diagnostic.cmake
file(READ "${FILE}" text)
if(NOT text MATCHES "// ERROR: ([0-9]+):([0-9]+): ([^\n]*)")
  message(FATAL_ERROR "${FILE}: no '// ERROR: line:col: message' header")
endif()
set(line "${CMAKE_MATCH_1}")
set(col "${CMAKE_MATCH_2}")
set(msg "${CMAKE_MATCH_3}")
set(args "")
if(text MATCHES "// ARGS: ([^\n]*)")
  separate_arguments(args UNIX_COMMAND "${CMAKE_MATCH_1}")
endif()
set(want_exit 1)
if(text MATCHES "// EXIT: ([0-9]+)")
  set(want_exit "${CMAKE_MATCH_1}")
endif()

execute_process(COMMAND "${EXE}" check "${FILE}" ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)

if(NOT rc EQUAL want_exit)
  message(FATAL_ERROR "exit code ${rc}, expected ${want_exit}\nstderr:\n${err}")
endif()
set(head "${FILE}:${line}:${col}: error: ")
string(FIND "${err}" "${head}" pos)
if(pos LESS 0)
  message(FATAL_ERROR "no '${head}' in stderr:\n${err}")
endif()
string(FIND "${err}" "${msg}" mpos)
if(mpos LESS 0)
  message(FATAL_ERROR "message '${msg}' not in stderr:\n${err}")
endif()

# The two lines after the error line: the source line and the caret.
string(SUBSTRING "${err}" ${pos} -1 rest)
string(FIND "${rest}" "\n" nl)
math(EXPR nl "${nl} + 1")
string(SUBSTRING "${rest}" ${nl} -1 rest)
string(FIND "${rest}" "\n" nl)
string(SUBSTRING "${rest}" 0 ${nl} shown_source)
math(EXPR nl "${nl} + 1")
string(SUBSTRING "${rest}" ${nl} -1 rest)
string(FIND "${rest}" "\n" nl)
string(SUBSTRING "${rest}" 0 ${nl} shown_caret)

# Line LINE of the program, found without CMake lists (';' splits those).
set(src "${text}")
set(i 1)
while(i LESS line)
  string(FIND "${src}" "\n" nl)
  math(EXPR nl "${nl} + 1")
  string(SUBSTRING "${src}" ${nl} -1 src)
  math(EXPR i "${i} + 1")
endwhile()
string(FIND "${src}" "\n" nl)
string(SUBSTRING "${src}" 0 ${nl} want_source)
math(EXPR pad_len "${col} - 1")
string(REPEAT " " ${pad_len} pad)
if(NOT shown_source STREQUAL want_source)
  message(FATAL_ERROR "source line shown:\n${shown_source}\nexpected:\n${want_source}")
endif()
if(NOT shown_caret STREQUAL "${pad}^")
  message(FATAL_ERROR "caret line '${shown_caret}' is not under column ${col}")
endif()
