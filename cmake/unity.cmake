# asyncmlp_unity(TARGET BATCH): TARGET's .cpp sources compiled BATCH at a time,
# each batch one translation unit, so the headers they share are parsed and
# instantiated once, not BATCH times: CMake's UNITY_BUILD, except that each
# unity source includes its files by their path from the repository root
# (found through the root's include directory), never by absolute path. The
# unity source and every __FILE__ in it are then the same text in every clone,
# and ccache (tools/setup.sh) serves one clone's objects to another. (CMake
# writes relative paths only from 3.32, UNITY_BUILD_RELOCATABLE.)
#
# As CMake's: a source with compile options, definitions, flags or include
# directories of its own, or SKIP_UNITY_BUILD_INCLUSION, is compiled alone.
function(asyncmlp_unity target batch)
  get_target_property(sources ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  set(batches "")
  set(current "")
  set(count 0)
  foreach(source ${sources})
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${dir}")
    file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${path}")
    if(NOT path MATCHES "\\.cpp$" OR rel MATCHES "^\\.\\./")
      continue()
    endif()
    set(alone FALSE)
    foreach(property SKIP_UNITY_BUILD_INCLUSION COMPILE_OPTIONS COMPILE_DEFINITIONS COMPILE_FLAGS INCLUDE_DIRECTORIES)
      get_source_file_property(value "${path}" ${property})
      if(value)
        set(alone TRUE)
      endif()
    endforeach()
    if(alone)
      continue()
    endif()
    set_source_files_properties("${path}" PROPERTIES HEADER_FILE_ONLY ON)
    string(APPEND current "#include \"${rel}\"\n")
    math(EXPR count "${count} + 1")
    if(count EQUAL batch)
      list(APPEND batches "${current}")
      set(current "")
      set(count 0)
    endif()
  endforeach()
  if(current)
    list(APPEND batches "${current}")
  endif()
  set(n 0)
  foreach(body IN LISTS batches)
    set(unity "${CMAKE_CURRENT_BINARY_DIR}/unity/${target}_${n}.cpp")
    file(CONFIGURE OUTPUT "${unity}" CONTENT "// ${target}'s unity source ${n} (cmake/unity.cmake)\n${body}")
    target_sources(${target} PRIVATE "${unity}")
    math(EXPR n "${n} + 1")
  endforeach()
endfunction()
