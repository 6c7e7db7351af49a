# tensorclass_find_arrow([SO_VERSION <so version>]): Apache Arrow C++ and its
# Parquet library, for tensorclass::arrow, as the imported target
# TensorclassArrow::arrow (both libraries and their headers). Looked for in
# this order:
#   1. an Arrow C++ installation with its CMake packages (ArrowConfig.cmake
#      and ParquetConfig.cmake: Apache's apt repository, conda, a source
#      build), through CMAKE_PREFIX_PATH or Arrow_DIR and Parquet_DIR;
#   2. the pyarrow wheel of the Python TENSORCLASS_ARROW_PYTHON names, which
#      ships libarrow.so.<so version>, libparquet.so.<so version> and their
#      headers (pyarrow.get_include(), pyarrow.get_library_dirs()); the
#      versioned files are linked directly, so the wheel needs no
#      create_library_symlinks().
# With SO_VERSION, only that Arrow (an installed package names the one it was
# built with: another major version has another ABI).
# Sets TENSORCLASS_ARROW_FOUND, TENSORCLASS_ARROW_VERSION,
# TENSORCLASS_ARROW_SO_VERSION and, when not found, TENSORCLASS_ARROW_WHY_NOT.
function(tensorclass_find_arrow)
  cmake_parse_arguments(ARG "" "SO_VERSION" "" ${ARGN})
  set(TENSORCLASS_ARROW_FOUND FALSE PARENT_SCOPE)
  if(TARGET TensorclassArrow::arrow)
    get_target_property(_version TensorclassArrow::arrow TENSORCLASS_ARROW_VERSION)
    get_target_property(_so_version TensorclassArrow::arrow TENSORCLASS_ARROW_SO_VERSION)
    set(TENSORCLASS_ARROW_FOUND TRUE PARENT_SCOPE)
    set(TENSORCLASS_ARROW_VERSION "${_version}" PARENT_SCOPE)
    set(TENSORCLASS_ARROW_SO_VERSION "${_so_version}" PARENT_SCOPE)
    return()
  endif()

  set(_libraries "")
  set(_why_not "")
  # Their targets are seen from every directory, as TensorclassArrow::arrow is.
  set(CMAKE_FIND_PACKAGE_TARGETS_GLOBAL ON)
  find_package(Arrow CONFIG QUIET)
  if(Arrow_FOUND)
    find_package(Parquet CONFIG QUIET)
  endif()
  if(Arrow_FOUND AND Parquet_FOUND AND TARGET Arrow::arrow_shared AND TARGET Parquet::parquet_shared)
    set(_version "${ARROW_VERSION}")
    set(_so_version "${ARROW_SO_VERSION}")
    set(_libraries Arrow::arrow_shared Parquet::parquet_shared)
    set(_from "${Arrow_DIR}")
  elseif(TENSORCLASS_ARROW_PYTHON)
    execute_process(
      COMMAND "${TENSORCLASS_ARROW_PYTHON}" -c
              "import pyarrow as pa; i = pa.cpp_build_info; print(i.version); print(i.so_version); print(pa.get_include()); print(pa.get_library_dirs()[0])"
      OUTPUT_VARIABLE _answer RESULT_VARIABLE _rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _rc EQUAL 0)
      set(_why_not "${TENSORCLASS_ARROW_PYTHON} has no pyarrow")
    else()
      string(REPLACE "\n" ";" _answer "${_answer}")
      list(GET _answer 0 _version)
      list(GET _answer 1 _so_version)
      list(GET _answer 2 _include)
      list(GET _answer 3 _libdir)
      set(_header_arrow api.h)
      set(_header_parquet arrow/reader.h)
      foreach(_name arrow parquet)
        set(_file "${_libdir}/lib${_name}.so.${_so_version}")
        set(_header "${_include}/${_name}/${_header_${_name}}")
        if(NOT EXISTS "${_file}" OR NOT EXISTS "${_header}")
          set(_why_not "the pyarrow of ${TENSORCLASS_ARROW_PYTHON} has no ${_file} or ${_header}")
          break()
        endif()
        add_library(TensorclassArrow::${_name}_wheel SHARED IMPORTED GLOBAL)
        set_target_properties(TensorclassArrow::${_name}_wheel PROPERTIES
          IMPORTED_LOCATION "${_file}" IMPORTED_SONAME "lib${_name}.so.${_so_version}"
          INTERFACE_INCLUDE_DIRECTORIES "${_include}")
        list(APPEND _libraries TensorclassArrow::${_name}_wheel)
      endforeach()
      set(_from "the pyarrow wheel in ${_libdir}")
    endif()
  else()
    set(_why_not "no ArrowConfig.cmake/ParquetConfig.cmake (Arrow_DIR) and no TENSORCLASS_ARROW_PYTHON with pyarrow")
  endif()
  if(_why_not STREQUAL "" AND ARG_SO_VERSION AND NOT _so_version STREQUAL ARG_SO_VERSION)
    set(_why_not "Arrow ${_version} (so version ${_so_version}) from ${_from}; this package was built with so version ${ARG_SO_VERSION}")
  endif()
  if(NOT _why_not STREQUAL "")
    set(TENSORCLASS_ARROW_WHY_NOT "${_why_not}" PARENT_SCOPE)
    return()
  endif()

  # Arrow's C++ API passes std::string and friends across the library
  # boundary: it must have been built with the C++ ABI this project uses
  # (libtorch's _GLIBCXX_USE_CXX11_ABI, in TORCH_CXX_FLAGS). A program that
  # calls one such function links only when both agree.
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_LIBRARIES ${_libraries})
  set(CMAKE_REQUIRED_FLAGS "${TORCH_CXX_FLAGS}")
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_source_compiles([[
#include <arrow/status.h>
#include <parquet/exception.h>
#include <string>
int main() {
  std::string text = arrow::Status::Invalid("x").ToString();
  parquet::ParquetException error(text);
  return static_cast<int>(text.size() + std::string(error.what()).size()) == 0;
}
]] TENSORCLASS_ARROW_LINKS_${_so_version})
  if(NOT TENSORCLASS_ARROW_LINKS_${_so_version})
    set(TENSORCLASS_ARROW_WHY_NOT
        "Arrow ${_version} from ${_from} does not link with this libtorch's C++ ABI (TORCH_CXX_FLAGS: '${TORCH_CXX_FLAGS}')"
        PARENT_SCOPE)
    return()
  endif()

  add_library(TensorclassArrow::arrow INTERFACE IMPORTED GLOBAL)
  target_link_libraries(TensorclassArrow::arrow INTERFACE ${_libraries})
  set_target_properties(TensorclassArrow::arrow PROPERTIES
    TENSORCLASS_ARROW_VERSION "${_version}" TENSORCLASS_ARROW_SO_VERSION "${_so_version}")
  message(STATUS "Arrow C++ ${_version} (so version ${_so_version}): ${_from}")
  set(TENSORCLASS_ARROW_FOUND TRUE PARENT_SCOPE)
  set(TENSORCLASS_ARROW_VERSION "${_version}" PARENT_SCOPE)
  set(TENSORCLASS_ARROW_SO_VERSION "${_so_version}" PARENT_SCOPE)
endfunction()
