# cmake -DCASE=<name> -DREPO=<repo root> -DGEN=<tensorclass-gen> -DWORK_DIR=<dir> -DGENERATOR=<cmake generator>
#       -P generate_cases.cmake
#
# Configures a small project that calls tensorclass_generate() the way CASE
# says and checks the outcome: configuring succeeds, or fails with the
# function's own message. Only configures: nothing is built.

# name -> the project's body, and the message configuring must fail with ("" if it must succeed)
set(languages NONE)
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
elseif(CASE STREQUAL "valid")
  # The control: distinct stems, two targets with the same schema, configures.
  set(languages CXX)
  string(CONCAT body "add_executable(app main.cpp)\nadd_executable(other main.cpp)\n"
                "tensorclass_generate(TARGET app SCHEMAS a.yaml b.yaml)\n"
                "tensorclass_generate(TARGET other SCHEMAS a.yaml)\n")
  set(expected "")
else()
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()

set(dir "${WORK_DIR}/${CASE}")
file(REMOVE_RECURSE "${dir}")
file(WRITE "${dir}/CMakeLists.txt"
     "cmake_minimum_required(VERSION 3.25)\nproject(tcg_${CASE} LANGUAGES ${languages})\n"
     "include(\"${REPO}/cmake/TensorclassGenerate.cmake\")\nset(TENSORCLASS_GEN_EXECUTABLE \"${GEN}\")\n${body}")
file(WRITE "${dir}/main.cpp" "int main() { return 0; }\n")
foreach(schema a.yaml b.yaml sub/a.yaml sub/a.h)
  file(WRITE "${dir}/${schema}" "")
endforeach()

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
