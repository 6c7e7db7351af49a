# Registers a Catch suite with CTest, one test a source file: the test runs
# the cases of that file (Catch's -# file-name tags) in one process, but
# for the hidden ones ([.]), which their file's cases run in children. A case
# per process loads libtorch once per case, about 0.4 s of CPU here, which over a
# thousand cases was half of `./dev test`; a failing test still prints the
# case, section and values that failed. A last test fails when a case
# belongs to no registered file, so that no case goes unrun (Catch's
# --list-test-names-only exits with the number of cases it lists).
# tensorclass_register_test_files(<target> <ctest prefix> <sources>
#   [WORKING_DIRECTORY dir] [PROPERTIES prop value ...])
function(tensorclass_register_test_files target prefix sources)
  cmake_parse_arguments(ARG "" "WORKING_DIRECTORY" "PROPERTIES" ${ARGN})
  if(NOT ARG_WORKING_DIRECTORY)
    set(ARG_WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  set(unregistered "")
  foreach(source IN LISTS sources)
    get_filename_component(stem "${source}" NAME_WE)
    get_filename_component(name "${source}" NAME)
    if(NOT stem MATCHES "^test_")
      continue()
    endif()
    set(test "${prefix}${name}")
    add_test(NAME "${test}" COMMAND ${target} --filenames-as-tags "[#${stem}]~[.]"
             WORKING_DIRECTORY "${ARG_WORKING_DIRECTORY}")
    if(ARG_PROPERTIES)
      set_tests_properties("${test}" PROPERTIES ${ARG_PROPERTIES})
    endif()
    string(APPEND unregistered "~[#${stem}]")
  endforeach()
  add_test(NAME "${prefix}${target}: every case is in a file registered with CTest"
           COMMAND sh -c "cases=$(\"$1\" --filenames-as-tags --list-test-names-only \"$2\"); [ -z \"$cases\" ] || { echo \"cases outside the test_*.cpp files CTest runs:\"; echo \"$cases\"; exit 1; }"
                   sh $<TARGET_FILE:${target}> "${unregistered}~[.]")
endfunction()
