# One fmt for the whole project, headers and library alike.
#
# libtorch 2.x puts its own fmt headers (fmt 11/12) on the include path of
# everything that links it, without exporting fmt's compiled symbols. Against
# such a libtorch, fmt is used header-only (FMT_HEADER_ONLY) from those same
# headers; otherwise (Debian's libtorch 1.13) it is the system's fmt package.
# Everything in the project links tensorclass::fmt and never fmt::fmt.
function(tensorclass_find_fmt)
  find_path(TENSORCLASS_TORCH_FMT_INCLUDE_DIR fmt/format.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  add_library(tensorclass_fmt INTERFACE)
  add_library(tensorclass::fmt ALIAS tensorclass_fmt)
  set_target_properties(tensorclass_fmt PROPERTIES EXPORT_NAME fmt)
  if(TENSORCLASS_TORCH_FMT_INCLUDE_DIR)
    message(STATUS "tensorclass: fmt header-only from libtorch's ${TENSORCLASS_TORCH_FMT_INCLUDE_DIR}")
    target_compile_definitions(tensorclass_fmt INTERFACE FMT_HEADER_ONLY=1)
    # The generator links no libtorch but must see the same headers. An
    # installed package's consumers get them from the torch target.
    target_include_directories(tensorclass_fmt SYSTEM INTERFACE $<BUILD_INTERFACE:${TENSORCLASS_TORCH_FMT_INCLUDE_DIR}>)
    set(TENSORCLASS_FMT_FROM_TORCH ON PARENT_SCOPE)
  else()
    find_package(fmt REQUIRED)
    target_link_libraries(tensorclass_fmt INTERFACE fmt::fmt)
    set(TENSORCLASS_FMT_FROM_TORCH OFF PARENT_SCOPE)
  endif()
  install(TARGETS tensorclass_fmt EXPORT tensorclassTargets)
endfunction()
