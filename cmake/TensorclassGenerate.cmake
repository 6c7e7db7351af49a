# tensorclass_generate(TARGET <target> SCHEMAS <files...> [OUT_DIR <dir>] [INCLUDE_DIRS <dirs...>]
#                      [PYTHON_OUT <dir>])
#
# Runs tensorclass-gen at build time on each schema (YAML, or an annotated C++
# header), writing <OUT_DIR>/<name>.tc.h. The generator's --depfile makes every
# output depend on its schema, the schemas it imports (or, for headers, their
# non-system includes) and the generator itself: nothing else regenerates.
# The generated headers are added to <target>'s sources, <OUT_DIR> (and the
# directories of header schemas) to its include path, and tensorclass::runtime
# to its link libraries.
#
# With PYTHON_OUT, building <target> also writes each schema's Python module
# (tensorclass-gen --lang python) under <dir>: the package of its python_module,
# e.g. <dir>/tc/rl/__init__.py; put <dir> on sys.path. Since those paths come
# from the schemas, the build rule's output is a stamp file listing them.
#
# Works in a build tree (add_subdirectory) and from an installed package
# (find_package(tensorclass)). A schema importing another needs both listed.
# With TENSORCLASS_GEN_EXECUTABLE set (like protobuf's
# Protobuf_PROTOC_EXECUTABLE), that generator runs instead of the built or
# installed one: the host's, in a cross build.
function(tensorclass_generate)
  cmake_parse_arguments(PARSE_ARGV 0 TCG "" "TARGET;OUT_DIR;PYTHON_OUT" "SCHEMAS;INCLUDE_DIRS")
  if(NOT TCG_TARGET)
    message(FATAL_ERROR "tensorclass_generate: TARGET is required")
  endif()
  if(NOT TCG_SCHEMAS)
    message(FATAL_ERROR "tensorclass_generate: SCHEMAS is required")
  endif()
  if(TCG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tensorclass_generate: unknown arguments ${TCG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TCG_OUT_DIR)
    set(TCG_OUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/tensorclass_generated/${TCG_TARGET}")
  endif()
  get_filename_component(TCG_OUT_DIR "${TCG_OUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  if(TCG_PYTHON_OUT)
    get_filename_component(TCG_PYTHON_OUT "${TCG_PYTHON_OUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
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
  set(_header_dirs)
  foreach(_schema IN LISTS TCG_SCHEMAS)
    get_filename_component(_abs "${_schema}" ABSOLUTE)
    get_filename_component(_name "${_abs}" NAME_WLE)
    get_filename_component(_ext "${_abs}" LAST_EXT)
    if(_ext MATCHES "^\\.(h|hpp|hh|hxx)$")
      get_filename_component(_dir "${_abs}" DIRECTORY)
      list(APPEND _header_dirs "${_dir}")
    endif()
    set(_out "${TCG_OUT_DIR}/${_name}.tc.h")
    set(_dep "${TCG_OUT_DIR}/${_name}.tc.h.d")
    add_custom_command(
      OUTPUT "${_out}"
      COMMAND ${_gen} "${_abs}" -o "${TCG_OUT_DIR}" --depfile "${_dep}" ${_include_args}
      DEPENDS "${_abs}" ${_gen}
      DEPFILE "${_dep}"
      COMMENT "tensorclass-gen ${_name}${_ext}"
      VERBATIM)
    list(APPEND _outputs "${_out}")
    if(TCG_PYTHON_OUT)
      set(_stamp "${TCG_OUT_DIR}/${_name}.py.stamp")
      add_custom_command(
        OUTPUT "${_stamp}"
        COMMAND ${_gen} --lang python "${_abs}" -o "${TCG_PYTHON_OUT}" --stamp "${_stamp}" --depfile "${_stamp}.d"
                ${_include_args}
        DEPENDS "${_abs}" ${_gen}
        DEPFILE "${_stamp}.d"
        COMMENT "tensorclass-gen --lang python ${_name}${_ext}"
        VERBATIM)
      list(APPEND _outputs "${_stamp}")
    endif()
  endforeach()

  target_sources(${TCG_TARGET} PRIVATE ${_outputs})
  list(REMOVE_DUPLICATES _header_dirs)
  target_include_directories(${TCG_TARGET} PUBLIC "$<BUILD_INTERFACE:${TCG_OUT_DIR}>")
  foreach(_dir IN LISTS _header_dirs)
    target_include_directories(${TCG_TARGET} PUBLIC "$<BUILD_INTERFACE:${_dir}>")
  endforeach()
  if(TARGET tensorclass::runtime)
    target_link_libraries(${TCG_TARGET} PUBLIC tensorclass::runtime)
  endif()
endfunction()
