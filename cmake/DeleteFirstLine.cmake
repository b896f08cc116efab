# cmake -DFILE=<file> -DTEXT=<text> -P DeleteFirstLine.cmake: deletes the
# first line of FILE that contains TEXT (fails when none does). Used to make
# a broken generated program whose watchdog must fire.
file(READ "${FILE}" content)
string(FIND "${content}" "${TEXT}" at)
if(at LESS 0)
  message(FATAL_ERROR "${FILE}: no line holds '${TEXT}'")
endif()
string(SUBSTRING "${content}" 0 ${at} before)
string(SUBSTRING "${content}" ${at} -1 after)
string(FIND "${before}" "\n" start REVERSE)
math(EXPR start "${start} + 1")
string(SUBSTRING "${content}" 0 ${start} head)
string(FIND "${after}" "\n" end)
math(EXPR end "${end} + 1")
string(SUBSTRING "${after}" ${end} -1 tail)
file(WRITE "${FILE}" "${head}// (a line holding '${TEXT}' was deleted here)\n${tail}")
