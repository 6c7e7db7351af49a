# cmake -DCASE=<name> -DREPO=<repo root> -DGEN=<tensorclass-gen> -DWORK_DIR=<dir> -DGENERATOR=<cmake generator>
#       -P generate_cases.cmake
#
# Configures a small project that calls tensorclass_generate() the way CASE
# says and checks the outcome: configuring succeeds, or fails with the
# function's own message. Only the shared_types case also builds: its sources
# check that the generated headers exist when they compile, and the generated
# sources compile against the generator's stand-in headers
# (generator/stub_include; against the real runtime, tests/install/ does it).

# name -> the project's body, and the message configuring must fail with ("" if it must succeed)
set(languages NONE)
set(build OFF)
if(CASE STREQUAL "missing_target")
  set(body "tensorclass_generate(TARGET app SCHEMAS a.yaml)\nadd_custom_target(app)\n")
  set(expected "tensorclass_generate: there is no target 'app' (yet): create it with add_executable(app ...) or add_library(app ...) before calling tensorclass_generate(TARGET app ...)")
elseif(CASE STREQUAL "same_stem")
  set(body "add_custom_target(app)\ntensorclass_generate(TARGET app SCHEMAS a.yaml sub/a.h)\n")
  set(expected "tensorclass_generate: schemas ${WORK_DIR}/${CASE}/a.yaml and ${WORK_DIR}/${CASE}/sub/a.h would both generate a.tc.h for target 'app' (outputs are named by the schema's file name without its extension); rename one of them")
elseif(CASE STREQUAL "same_stem_across_calls")
  set(body "add_custom_target(app)\ntensorclass_generate(TARGET app SCHEMAS a.yaml)\ntensorclass_generate(TARGET app SCHEMAS sub/a.yaml OUT_DIR other)\n")
  set(expected "tensorclass_generate: schemas ${WORK_DIR}/${CASE}/a.yaml and ${WORK_DIR}/${CASE}/sub/a.yaml would both generate a.tc.h for target 'app'")
elseif(CASE STREQUAL "same_schema_twice")
  set(body "add_custom_target(app)\ntensorclass_generate(TARGET app SCHEMAS a.yaml b.yaml a.yaml)\n")
  set(expected "tensorclass_generate: schema ${WORK_DIR}/${CASE}/a.yaml is given twice for target 'app'")
elseif(CASE STREQUAL "python_form_without_out")
  set(body "add_custom_target(app)\ntensorclass_generate(TARGET app SCHEMAS a.yaml PYTHON_FORM both)\n")
  set(expected "tensorclass_generate: PYTHON_FORM needs PYTHON_OUT (it chooses the Python modules' form)")
elseif(CASE STREQUAL "bad_python_form")
  set(body "add_custom_target(app)\ntensorclass_generate(TARGET app SCHEMAS a.yaml PYTHON_OUT py PYTHON_FORM typed)\n")
  set(expected "tensorclass_generate: PYTHON_FORM is tensorclass, typed_tensordict or both, not 'typed'")
elseif(CASE STREQUAL "valid")
  # The control: distinct stems, two targets with the same schema, configures.
  set(languages CXX)
  string(CONCAT body "add_executable(app main.cpp)\nadd_executable(other main.cpp)\n"
                "tensorclass_generate(TARGET app SCHEMAS a.yaml b.yaml)\n"
                "tensorclass_generate(TARGET other SCHEMAS a.yaml)\n")
  set(expected "")
elseif(CASE STREQUAL "shared_types")
  # One set of generated types shared through an INTERFACE library by two
  # executables, and libraries of generated types (STATIC, OBJECT) linked by
  # others: every user sees the headers when it compiles, and each schema is
  # generated once (the generator is a wrapper that logs its calls).
  set(languages CXX)
  set(build ON)
  string(CONCAT body
    "set(CMAKE_CXX_STANDARD 20)\ninclude_directories(\"${REPO}/generator/stub_include\" \"${REPO}/runtime/include\")\n"
    "add_library(types INTERFACE)\n"
    "tensorclass_generate(TARGET types SCHEMAS a.yaml PYTHON_OUT python PYTHON_FORM both)\n"
    "add_executable(first uses_a.cpp)\nadd_executable(second uses_a.cpp)\n"
    "target_link_libraries(first PRIVATE types)\ntarget_link_libraries(second PRIVATE types)\n"
    "add_library(static_types STATIC uses_b_lib.cpp)\n"
    "tensorclass_generate(TARGET static_types SCHEMAS b.yaml)\n"
    "add_executable(third uses_b.cpp)\ntarget_link_libraries(third PRIVATE static_types)\n"
    "add_library(object_types OBJECT uses_a_lib.cpp)\n"
    "tensorclass_generate(TARGET object_types SCHEMAS sub/a.yaml OUT_DIR sub_out)\n"
    "add_executable(fourth uses_a.cpp)\ntarget_link_libraries(fourth PRIVATE object_types)\n")
  set(expected "")
else()
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()

set(dir "${WORK_DIR}/${CASE}")
file(REMOVE_RECURSE "${dir}")
set(gen "${GEN}")
if(build)
  set(gen "${dir}/logging-gen")
  file(WRITE "${gen}" "#!/bin/sh\necho \"$*\" >> '${dir}/generator-calls.log'\nexec '${GEN}' \"$@\"\n")
  file(CHMOD "${gen}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
endif()
file(WRITE "${dir}/CMakeLists.txt"
     "cmake_minimum_required(VERSION 3.25)\nproject(tcg_${CASE} LANGUAGES ${languages})\n"
     "include(\"${REPO}/cmake/TensorclassGenerate.cmake\")\nset(TENSORCLASS_GEN_EXECUTABLE \"${gen}\")\n${body}")
file(WRITE "${dir}/main.cpp" "int main() { return 0; }\n")
foreach(stem a b)
  set(check "#if !__has_include(\"${stem}.tc.h\")\n#error ${stem}.tc.h is not on the include path or not generated yet\n#endif\n")
  file(WRITE "${dir}/uses_${stem}.cpp" "${check}int main() { return 0; }\n")
  file(WRITE "${dir}/uses_${stem}_lib.cpp" "${check}int ${stem}_lib() { return 0; }\n")
endforeach()
foreach(schema a.yaml b.yaml sub/a.yaml)
  if(build)
    string(REGEX REPLACE "[/.]" "_" ns "${schema}")
    file(WRITE "${dir}/${schema}" "namespace: ${ns}\ntensorclasses:\n  Step:\n    fields:\n      obs: {dtype: float32, shape: [...]}\n")
  else()
    file(WRITE "${dir}/${schema}" "")
  endif()
endforeach()
file(WRITE "${dir}/sub/a.h" "")

execute_process(COMMAND ${CMAKE_COMMAND} -S "${dir}" -B "${dir}/build" -G "${GENERATOR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
# CMake wraps long messages: compare with the whitespace collapsed.
string(REGEX REPLACE "[ \n]+" " " err_flat "${err}")
if(expected STREQUAL "")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CASE}: configuring failed (${rc}):\n${out}\n${err}")
  endif()
else()
  string(FIND "${err_flat}" "${expected}" found)
  if(rc EQUAL 0 OR found EQUAL -1)
    message(FATAL_ERROR "${CASE}: expected configuring to fail with\n  ${expected}\ngot (${rc}):\n${err}")
  endif()
endif()

if(build)
  execute_process(COMMAND ${CMAKE_COMMAND} --build "${dir}/build" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CASE}: building failed (${rc}):\n${out}\n${err}")
  endif()
  file(STRINGS "${dir}/generator-calls.log" calls)
  list(LENGTH calls count)
  # a.yaml (C++ and Python), b.yaml, sub/a.yaml: once each.
  if(NOT count EQUAL 4)
    message(FATAL_ERROR "${CASE}: expected 4 generator runs, got ${count}:\n${calls}")
  endif()
  if(NOT EXISTS "${dir}/build/python/a_yaml/__init__.py")
    message(FATAL_ERROR "${CASE}: the INTERFACE library's PYTHON_OUT module was not generated")
  endif()
  # PYTHON_FORM both: the TypedTensorDicts beside the @tensorclasses.
  if(NOT EXISTS "${dir}/build/python/a_yaml/typed/__init__.py")
    message(FATAL_ERROR "${CASE}: PYTHON_FORM both wrote no TypedTensorDict module")
  endif()
  # An INTERFACE library compiles nothing: each executable that links it
  # compiles the generated source; a STATIC library compiles its own once.
  foreach(object first.dir/tensorclass_generated/types/a.tc.cpp.o second.dir/tensorclass_generated/types/a.tc.cpp.o
                 static_types.dir/tensorclass_generated/static_types/b.tc.cpp.o)
    if(NOT EXISTS "${dir}/build/CMakeFiles/${object}")
      message(FATAL_ERROR "${CASE}: ${object} was not compiled")
    endif()
  endforeach()
  if(EXISTS "${dir}/build/CMakeFiles/third.dir/tensorclass_generated/static_types/b.tc.cpp.o")
    message(FATAL_ERROR "${CASE}: third compiled the STATIC library's generated source again")
  endif()
  # Nothing left to do: a second build runs no generator.
  execute_process(COMMAND ${CMAKE_COMMAND} --build "${dir}/build" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  file(STRINGS "${dir}/generator-calls.log" calls)
  list(LENGTH calls count)
  if(NOT rc EQUAL 0 OR NOT count EQUAL 4)
    message(FATAL_ERROR "${CASE}: a second build failed or ran the generator again (${rc}, ${count} runs):\n${out}\n${err}")
  endif()
endif()
