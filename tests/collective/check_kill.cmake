# Runs collective_test --mode kill with 3 ranks (cpu, sim, cpu): the last one
# kills itself during a large all_reduce. Every survivor must print a
# SURVIVOR line naming the dead rank within 5 s; mpirun must not hang.
execute_process(
  COMMAND ${MPIEXEC} --enable-recovery -n 3 ${TEST} --manifests ${MANIFESTS} --plugins cpu,sim --mode kill
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 90)
message(STATUS "mpirun exit: ${rc}\n${out}")
if(rc MATCHES "timeout")
  message(FATAL_ERROR "mpirun did not end: the survivors hung\n${err}")
endif()
if(NOT out MATCHES "VICTIM rank 2")
  message(FATAL_ERROR "the victim never got to kill itself\n${err}")
endif()
foreach(rank 0 1)
  if(NOT out MATCHES "SURVIVOR rank ${rank} seconds=([0-9.]+) code=UNAVAILABLE: [^\n]*rank 2 \\(pid")
    message(FATAL_ERROR "rank ${rank} did not report rank 2's death\n${err}")
  endif()
  if(CMAKE_MATCH_1 GREATER 5)
    message(FATAL_ERROR "rank ${rank} took ${CMAKE_MATCH_1} s to notice")
  endif()
endforeach()
