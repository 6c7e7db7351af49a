# clang 14 in C++20 mode cannot parse libtorch 1.13's <ATen/core/List.h> with
# libstdc++ 12: ListImpl's (non-template) constructor and
# ptr_to_first_element() use std::vector<IValue> while IValue is still
# incomplete, and C++20's constexpr std::vector gets instantiated there. GCC
# accepts it. For clang builds (fuzzers) we write a copy of the installed
# header with those two functions turned into templates (instantiated later,
# when IValue is complete) and put it first on the include path. Nothing is
# vendored: the copy is made from the installed header at configure time.
function(tensorclass_clang_libtorch_shim)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    return()
  endif()
  find_file(_tc_list_h ATen/core/List.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  if(NOT _tc_list_h)
    find_file(_tc_list_h ATen/core/List.h)
  endif()
  if(NOT _tc_list_h)
    return()
  endif()
  file(READ "${_tc_list_h}" text)
  set(ctor_old "  explicit ListImpl(list_type list_, TypePtr elementType_)")
  set(ctor_new "  template <class L = list_type>\n  explicit ListImpl(L list_, TypePtr elementType_)")
  set(ptr_old "inline const IValue* ptr_to_first_element(const GenericList& list) {")
  set(ptr_new "template <class L = GenericList>\ninline const IValue* ptr_to_first_element(const L& list) {")
  string(FIND "${text}" "${ctor_old}" has_ctor)
  string(FIND "${text}" "${ptr_old}" has_ptr)
  if(has_ctor EQUAL -1 OR has_ptr EQUAL -1)
    message(STATUS "tensorclass: ${_tc_list_h} does not need the clang shim")
    return()
  endif()
  string(REPLACE "${ctor_old}" "${ctor_new}" text "${text}")
  string(REPLACE "${ptr_old}" "${ptr_new}" text "${text}")
  set(dir "${PROJECT_BINARY_DIR}/clang-libtorch-shim")
  file(WRITE "${dir}/ATen/core/List.h" "${text}")
  include_directories(BEFORE SYSTEM "${dir}")
  message(STATUS "tensorclass: clang shim for ${_tc_list_h} in ${dir}")
endfunction()
