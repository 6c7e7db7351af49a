# tensorclass_generate(TARGET <target> SCHEMAS <files...> [OUT_DIR <dir>] [INCLUDE_DIRS <dirs...>]
#                      [PYTHON_OUT <dir> [PYTHON_FORM tensorclass|typed_tensordict|both]])
#
# Runs tensorclass-gen at build time on each schema (YAML, or an annotated C++
# header), writing <OUT_DIR>/<name>.tc.h and <OUT_DIR>/<name>.tc.cpp (the
# typed engine of the schema's classes, compiled once there rather than in
# every unit that includes the header). The generator's --depfile makes every
# output depend on its schema, the schemas it imports (or, for headers, their
# non-system includes) and the generator itself: nothing else regenerates.
# The generated files are added to <target>'s sources, <OUT_DIR> (and the
# directories of header schemas) to its include path, and tensorclass::runtime
# to its link libraries.
#
# <target> may be an executable or a library of any kind. To share one set of
# generated types between several targets, generate them into a library and
# link it: an INTERFACE library (add_library(robot_types INTERFACE)) passes on
# the include path, the .tc.cpp files and tensorclass::runtime, the
# generation runs once, as part of building the library, and whatever links
# the library waits for it, so the headers exist before any of its users
# compiles; each target that links it compiles the .tc.cpp files (an
# INTERFACE library compiles nothing). A STATIC or OBJECT library of
# generated types compiles them once (PUBLIC instead of INTERFACE).
#
# With PYTHON_OUT, building <target> also writes each schema's Python module
# (tensorclass-gen --lang python) under <dir>: the package of its python_module,
# e.g. <dir>/tc/rl/__init__.py; put <dir> on sys.path. Since those paths come
# from the schemas, the build rule's output is a stamp file listing them.
# PYTHON_FORM makes every schema's classes that form (tensorclass-gen
# --python-form): @tensorclasses, TypedTensorDict subclasses, or both (the
# TypedTensorDicts in the submodule <python_module>.typed); without it, each
# schema's python_form says.
#
# Works in a build tree (add_subdirectory) and from an installed package
# (find_package(tensorclass)). A schema importing another needs both listed.
# With TENSORCLASS_GEN_EXECUTABLE set (like protobuf's
# Protobuf_PROTOC_EXECUTABLE), that generator runs instead of the built or
# installed one: the host's, in a cross build.
function(tensorclass_generate)
  cmake_parse_arguments(PARSE_ARGV 0 TCG "" "TARGET;OUT_DIR;PYTHON_OUT;PYTHON_FORM" "SCHEMAS;INCLUDE_DIRS")
  if(NOT TCG_TARGET)
    message(FATAL_ERROR "tensorclass_generate: TARGET is required")
  endif()
  if(NOT TCG_SCHEMAS)
    message(FATAL_ERROR "tensorclass_generate: SCHEMAS is required")
  endif()
  if(TCG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tensorclass_generate: unknown arguments ${TCG_UNPARSED_ARGUMENTS}")
  endif()
  # Checked here: target_sources would fail later with a message that does not
  # say that the call comes too early.
  if(NOT TARGET ${TCG_TARGET})
    message(FATAL_ERROR "tensorclass_generate: there is no target '${TCG_TARGET}' (yet): create it with "
                        "add_executable(${TCG_TARGET} ...) or add_library(${TCG_TARGET} ...) before calling "
                        "tensorclass_generate(TARGET ${TCG_TARGET} ...)")
  endif()
  if(NOT TCG_OUT_DIR)
    set(TCG_OUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/tensorclass_generated/${TCG_TARGET}")
  endif()
  get_filename_component(TCG_OUT_DIR "${TCG_OUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  if(TCG_PYTHON_OUT)
    get_filename_component(TCG_PYTHON_OUT "${TCG_PYTHON_OUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  set(_python_form_args)
  if(TCG_PYTHON_FORM)
    if(NOT TCG_PYTHON_OUT)
      message(FATAL_ERROR "tensorclass_generate: PYTHON_FORM needs PYTHON_OUT (it chooses the Python modules' form)")
    endif()
    if(NOT TCG_PYTHON_FORM MATCHES "^(tensorclass|typed_tensordict|both)$")
      message(FATAL_ERROR "tensorclass_generate: PYTHON_FORM is tensorclass, typed_tensordict or both, not '${TCG_PYTHON_FORM}'")
    endif()
    set(_python_form_args --python-form ${TCG_PYTHON_FORM})
  endif()

  if(TENSORCLASS_GEN_EXECUTABLE)
    set(_gen "${TENSORCLASS_GEN_EXECUTABLE}")
  elseif(TARGET tensorclass-gen)
    set(_gen tensorclass-gen)
  elseif(TARGET tensorclass::gen)
    set(_gen tensorclass::gen)
  elseif(TARGET tensorclass::tensorclass-gen)  # the installed package's name for it
    set(_gen tensorclass::tensorclass-gen)
  else()
    message(FATAL_ERROR "tensorclass_generate: no tensorclass-gen target (build with TENSORCLASS_BUILD_GENERATOR=ON, or name a prebuilt one with -DTENSORCLASS_GEN_EXECUTABLE=<path>)")
  endif()

  set(_include_args)
  foreach(_dir IN LISTS TCG_INCLUDE_DIRS)
    get_filename_component(_dir "${_dir}" ABSOLUTE)
    list(APPEND _include_args -I "${_dir}")
  endforeach()

  set(_outputs)
  set(_sources)
  set(_header_dirs)
  foreach(_schema IN LISTS TCG_SCHEMAS)
    get_filename_component(_abs "${_schema}" ABSOLUTE)
    get_filename_component(_name "${_abs}" NAME_WLE)
    get_filename_component(_ext "${_abs}" LAST_EXT)
    _tensorclass_claim_stem(${TCG_TARGET} "${_name}" "${_abs}")
    if(_ext MATCHES "^\\.(h|hpp|hh|hxx)$")
      get_filename_component(_dir "${_abs}" DIRECTORY)
      list(APPEND _header_dirs "${_dir}")
    endif()
    set(_out "${TCG_OUT_DIR}/${_name}.tc.h")
    set(_src "${TCG_OUT_DIR}/${_name}.tc.cpp")
    set(_dep "${TCG_OUT_DIR}/${_name}.tc.h.d")
    add_custom_command(
      OUTPUT "${_out}" "${_src}"
      COMMAND ${_gen} "${_abs}" -o "${TCG_OUT_DIR}" --depfile "${_dep}" ${_include_args}
      DEPENDS "${_abs}" ${_gen}
      DEPFILE "${_dep}"
      COMMENT "tensorclass-gen ${_name}${_ext}"
      VERBATIM)
    list(APPEND _outputs "${_out}")
    list(APPEND _sources "${_src}")
    if(TCG_PYTHON_OUT)
      set(_stamp "${TCG_OUT_DIR}/${_name}.py.stamp")
      add_custom_command(
        OUTPUT "${_stamp}"
        COMMAND ${_gen} --lang python ${_python_form_args} "${_abs}" -o "${TCG_PYTHON_OUT}" --stamp "${_stamp}"
                --depfile "${_stamp}.d" ${_include_args}
        DEPENDS "${_abs}" ${_gen}
        DEPFILE "${_stamp}.d"
        COMMENT "tensorclass-gen --lang python ${_name}${_ext}"
        VERBATIM)
      list(APPEND _outputs "${_stamp}")
    endif()
  endforeach()

  # The outputs are private sources of the target, so their rules run once,
  # as part of building it, whatever links it. An INTERFACE library with
  # sources is a build target too (CMake >= 3.19): what links it waits for it,
  # so the headers exist before any of its users compiles. Its usage
  # requirements can only be INTERFACE ones.
  target_sources(${TCG_TARGET} PRIVATE ${_outputs} ${_sources})
  get_target_property(_type ${TCG_TARGET} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    set(_scope INTERFACE)
    # An INTERFACE library compiles nothing: the targets that link it compile
    # the sources.
    target_sources(${TCG_TARGET} INTERFACE "$<BUILD_INTERFACE:${_sources}>")
  else()
    set(_scope PUBLIC)
  endif()
  list(REMOVE_DUPLICATES _header_dirs)
  target_include_directories(${TCG_TARGET} ${_scope} "$<BUILD_INTERFACE:${TCG_OUT_DIR}>")
  foreach(_dir IN LISTS _header_dirs)
    target_include_directories(${TCG_TARGET} ${_scope} "$<BUILD_INTERFACE:${_dir}>")
  endforeach()
  if(TARGET tensorclass::runtime)
    target_link_libraries(${TCG_TARGET} ${_scope} tensorclass::runtime)
  endif()
endfunction()

# Outputs are named by the schema's stem (a.yaml and a.h both give a.tc.h), and
# every output directory of a target is on its include path: two schemas of one
# target (in one call or several) with the same stem would overwrite each
# other's output or make #include "a.tc.h" ambiguous. The stems claimed so far
# and their schemas are two parallel lists in properties of the target.
function(_tensorclass_claim_stem target stem schema)
  get_target_property(_stems ${target} _TENSORCLASS_STEMS)
  get_target_property(_schemas ${target} _TENSORCLASS_SCHEMAS)
  if(_stems)
    list(FIND _stems "${stem}" _index)
  else()
    set(_index -1)
  endif()
  if(NOT _index EQUAL -1)
    list(GET _schemas ${_index} _first)
    if(_first STREQUAL schema)
      message(FATAL_ERROR "tensorclass_generate: schema ${schema} is given twice for target '${target}'")
    endif()
    message(FATAL_ERROR "tensorclass_generate: schemas ${_first} and ${schema} would both generate ${stem}.tc.h "
                        "for target '${target}' (outputs are named by the schema's file name without its "
                        "extension); rename one of them")
  endif()
  set_property(TARGET ${target} APPEND PROPERTY _TENSORCLASS_STEMS "${stem}")
  set_property(TARGET ${target} APPEND PROPERTY _TENSORCLASS_SCHEMAS "${schema}")
endfunction()
