# Fails unless LIBRARY exports exactly one defined dynamic symbol, tessera_plugin_entry.
# cmake -DNM=<nm> -DLIBRARY=<plugin.so> -P check_exports.cmake
if(NOT NM OR NOT LIBRARY)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DLIBRARY=<plugin.so> -P check_exports.cmake")
endif()
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
  OUTPUT_VARIABLE listing RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(exported "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>"; type A is a version node (the map's), not a symbol.
  if(line MATCHES "^[0-9a-fA-F]* +([A-Za-z]) +([^ ]+)$" AND NOT CMAKE_MATCH_1 STREQUAL "A")
    list(APPEND exported "${CMAKE_MATCH_2}")
  endif()
endforeach()
if(NOT exported STREQUAL "tessera_plugin_entry")
  list(LENGTH exported count)
  list(JOIN exported "\n  " names)
  message(FATAL_ERROR "${LIBRARY} exports ${count} symbols, not only tessera_plugin_entry:\n  ${names}")
endif()
message(STATUS "${LIBRARY} exports only tessera_plugin_entry")
