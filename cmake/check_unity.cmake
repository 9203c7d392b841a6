# cmake -DBUILD=<build folder> -P check_unity.cmake: the unity sources
# cmake/unity.cmake wrote include their files by path from the repository
# root, none by absolute path (ccache's copies across clones depend on it),
# and each file is included by one unity source at most. CTest runs it
# (tests/CMakeLists.txt, unity_sources_from_root).
cmake_minimum_required(VERSION 3.20)
file(GLOB_RECURSE unity_sources "${BUILD}/*/unity/*.cpp")
list(LENGTH unity_sources count)
if(count EQUAL 0)
  message(FATAL_ERROR "no unity sources under ${BUILD}/*/unity/ (cmake/unity.cmake writes them)")
endif()
set(seen "")
foreach(unity ${unity_sources})
  file(STRINGS "${unity}" includes REGEX "^#include ")
  if(NOT includes)
    message(FATAL_ERROR "${unity} includes nothing")
  endif()
  foreach(line ${includes})
    if(NOT line MATCHES "^#include \"((framework|train|tests|models|python)/[^\"]+\\.cpp)\"$")
      message(FATAL_ERROR "${unity}: `${line}` is not a path from the repository root")
    endif()
    set(file "${CMAKE_MATCH_1}")
    if(file IN_LIST seen)
      message(FATAL_ERROR "${unity}: ${file} is included by another unity source too")
    endif()
    list(APPEND seen "${file}")
  endforeach()
endforeach()
message(STATUS "${count} unity sources, each naming its files from the repository root")
