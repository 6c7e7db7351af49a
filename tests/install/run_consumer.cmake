# cmake -DBUILD_DIR=... -DCONSUMER_SOURCE=... -DWORK_DIR=... -DGENERATOR=... [-DTORCH_DIR=<Torch_DIR>]
#       [-DTORCH_CUDA_ARCH_LIST=...] -P run_consumer.cmake
#
# Installs the build into one prefix, moves the installed tree to another
# (the package must be relocatable), then configures, builds and runs a
# consumer project against it. The consumer's generator is named through
# TENSORCLASS_GEN_EXECUTABLE (a wrapper that logs its calls and runs the
# installed tensorclass-gen), as a cross build names the host's.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
function(require_in text needle what)
  string(FIND "${text}" "${needle}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "${what}:\n${text}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(installed ${WORK_DIR}/installed)
set(prefix ${WORK_DIR}/moved)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${installed})
file(RENAME ${installed} ${prefix})

# Nothing installed may name this machine's library paths or the first prefix.
file(GLOB_RECURSE package_files ${prefix}/*.cmake)
foreach(f IN LISTS package_files)
  file(READ ${f} text)
  foreach(needle "${installed}" "${BUILD_DIR}" "libhdf5" "libcurl" "libpthread")
    string(FIND "${text}" "${needle}" found)
    if(NOT found EQUAL -1)
      message(FATAL_ERROR "the installed ${f} names ${needle}: the package is not relocatable")
    endif()
  endforeach()
endforeach()

# The installed documentation's relative links resolve inside the installed
# tree (links in fenced code and targets with spaces, lambdas in inline code,
# are no links; URLs and same-file anchors are not checked).
set(doc_dir ${prefix}/share/doc/tensorclass)
foreach(doc README.md install.md runtime.md schema-language.md formats.md benchmarks.md performance.md differences.md migration.md)
  if(NOT EXISTS ${doc_dir}/${doc})
    message(FATAL_ERROR "the documentation ${doc} is not installed in ${doc_dir}")
  endif()
endforeach()
file(GLOB_RECURSE docs ${prefix}/*.md)
set(links_checked 0)
foreach(doc IN LISTS docs)
  file(READ ${doc} text)
  string(REGEX REPLACE "```[^`]*(`[^`]+)*```" "" prose "${text}")
  string(REGEX MATCHALL "\\]\\([^ \t\n)]+\\)" links "${prose}")
  # "(target)" alone: a list element holding a bracket would not split.
  string(REPLACE "](" "(" links "${links}")
  get_filename_component(dir ${doc} DIRECTORY)
  foreach(link IN LISTS links)
    if(link MATCHES "^\\(([A-Za-z][A-Za-z0-9+.-]*:|#)")
      continue()
    endif()
    string(REGEX REPLACE "^\\(([^#)]*).*\\)$" "\\1" target "${link}")
    get_filename_component(resolved "${target}" ABSOLUTE BASE_DIR ${dir})
    file(RELATIVE_PATH inside ${prefix} ${resolved})
    if(NOT EXISTS ${resolved} OR inside MATCHES "^\\.\\./")
      message(FATAL_ERROR "the installed ${doc} links to ${target}, which is not in the installed tree")
    endif()
    math(EXPR links_checked "${links_checked} + 1")
  endforeach()
endforeach()
if(links_checked LESS 3)
  message(FATAL_ERROR "found only ${links_checked} relative links in the installed documentation: the check is broken")
endif()
# The consumer CMakeLists.txt that install.md shows is the one built below
# (less its first two lines, a comment naming the page).
file(READ ${CONSUMER_SOURCE}/CMakeLists.txt consumer_cmake)
string(REGEX REPLACE "^#[^\n]*\n#[^\n]*\n" "" consumer_cmake "${consumer_cmake}")
file(READ ${doc_dir}/install.md install_page)
string(FIND "${install_page}" "```cmake\n${consumer_cmake}```" found)
if(found EQUAL -1)
  message(FATAL_ERROR "the installed install.md does not show ${CONSUMER_SOURCE}/CMakeLists.txt as it is")
endif()
# The images the pages show are installed beside them.
file(GLOB installed_images ${doc_dir}/images/*.png)
if(NOT installed_images)
  message(FATAL_ERROR "no image of the documentation is installed in ${doc_dir}/images")
endif()

run(${prefix}/bin/tensorclass-gen --version)
require_in("${last_output}" "tensorclass-gen " "tensorclass-gen --version printed something unexpected")

set(gen_log ${WORK_DIR}/generator-calls.log)
set(wrapper ${WORK_DIR}/host-tensorclass-gen)
file(WRITE ${wrapper} "#!/bin/sh\necho \"$*\" >> '${gen_log}'\nexec '${prefix}/bin/tensorclass-gen' \"$@\"\n")
file(CHMOD ${wrapper} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)

# As a user points CMake at a libtorch: its CMake prefix (Torch_DIR alone
# would let torch's own dependencies, Caffe2, resolve to another libtorch).
set(ENV{CMAKE_PREFIX_PATH} "${prefix}")
if(TORCH_DIR)
  get_filename_component(torch_prefix "${TORCH_DIR}/.." ABSOLUTE)
  set(ENV{CMAKE_PREFIX_PATH} "${prefix}:${torch_prefix}")
endif()
set(configure_args -DTENSORCLASS_GEN_EXECUTABLE=${wrapper})
if(TORCH_CUDA_ARCH_LIST)
  list(APPEND configure_args "-DTORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST}")
endif()
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/build -G ${GENERATOR} ${configure_args})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
if(NOT EXISTS ${gen_log})
  message(FATAL_ERROR "the consumer's build did not run TENSORCLASS_GEN_EXECUTABLE (${wrapper})")
endif()
# The two executables share one INTERFACE library of generated types: its
# schema was generated once for C++ and once for Python, not per executable.
file(STRINGS ${gen_log} gen_calls REGEX "step\\.yaml")
list(LENGTH gen_calls gen_count)
if(NOT gen_count EQUAL 2)
  message(FATAL_ERROR "expected step.yaml generated twice (C++, Python), got ${gen_count} runs:\n${gen_calls}")
endif()
if(NOT EXISTS ${WORK_DIR}/build/python/consumer/__init__.py)
  message(FATAL_ERROR "the consumer's build did not write the Python module of step.yaml (PYTHON_OUT)")
endif()
run(${WORK_DIR}/build/consumer)
# tensordict 0.15.3 prints the same tensordict so (run in the test venv)
require_in("${last_output}" "TensorDict(batch_size=[2], fields={obs: f32[3], reward: f32[]})"
           "the consumer ran but printed something unexpected")
require_in("${last_output}" "Step(" "the consumer did not print its generated Step")
message(STATUS "consumer output:\n${last_output}")
run(${WORK_DIR}/build/policy)
require_in("${last_output}" "policy: Step(" "the second executable (tensorclass::nn on the shared types) printed something unexpected")
message(STATUS "policy output:\n${last_output}")
