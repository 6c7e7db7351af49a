# Finding libtorch: for the project, and (installed beside the package
# config) for the installed package's consumers, who need the same two fixes.
#
# 1. A CUDA build of libtorch (PyTorch 2.x's wheel, pytorch.org's CUDA zip)
#    probes the machine's GPUs by compiling and running a CUDA program at
#    configure time unless it is given the architectures. Nothing here
#    compiles CUDA code: name common ones unless the user did.
# 2. PyPI's torch wheel keeps the CUDA libraries it was built with beside it
#    (site-packages/nvidia/*/lib) and finds them through its RPATH, while
#    torch's CMake config links the local CUDA toolkit's libcudart, whose
#    directory then comes first for the linker and the loader; an older
#    toolkit there (or its NCCL) lacks symbols the wheel needs. Those
#    directories go first on every link and run path that links torch.
# 3. libtorch's own lib directory (unless it is the system's) goes on the run
#    path too, so that an installed shared library of ours finds the libtorch
#    libraries it needs itself (see _tensorclass_torch_wheel_libraries).
macro(tensorclass_find_torch)
  if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "8.0 9.0")
  endif()
  find_package(Torch ${ARGN})
  if(Torch_FOUND AND TORCH_INSTALL_PREFIX)
    _tensorclass_torch_wheel_libraries()
  endif()
endmacro()

function(_tensorclass_torch_wheel_libraries)
  if(NOT TARGET torch)
    return()
  endif()
  # libtorch's own directory, outside the system's: a shared library of ours
  # that needs one of its libraries the executable does not load itself
  # (libc10_cuda for CudaGraphModule) finds it there wherever it is
  # installed; an executable finds libtorch the same way.
  get_filename_component(torch_lib_dir "${TORCH_INSTALL_PREFIX}/lib" ABSOLUTE)
  if(NOT TORCH_INSTALL_PREFIX STREQUAL "/usr" AND EXISTS "${torch_lib_dir}")
    set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS "LINKER:-rpath,${torch_lib_dir}")
  endif()
  file(GLOB wheel_lib_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  if(NOT wheel_lib_dirs)
    return()
  endif()
  foreach(dir IN LISTS wheel_lib_dirs)
    get_filename_component(dir "${dir}" ABSOLUTE)
    set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS "LINKER:-rpath-link,${dir}" "LINKER:-rpath,${dir}")
  endforeach()
endfunction()
