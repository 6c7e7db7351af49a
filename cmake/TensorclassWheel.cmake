# The Python wheel's build (pyproject.toml sets TENSORCLASS_WHEEL=ON;
# `./dev wheel` runs it): the package installs under
# site-packages/tensorclass/ and finds torch's libraries in the installed
# torch wheel beside it. docs/install.md describes the result.

# libtorch: the torch of the Python that builds the wheel (scikit-build-core
# names it), unless CMAKE_PREFIX_PATH already leads to one.
macro(tensorclass_wheel_torch_prefix)
  if(NOT Torch_DIR)
    find_package(Python COMPONENTS Interpreter REQUIRED)
    execute_process(COMMAND "${Python_EXECUTABLE}" -c "import torch; print(torch.utils.cmake_prefix_path, end='')"
      OUTPUT_VARIABLE _tensorclass_torch_prefix RESULT_VARIABLE _tensorclass_torch_rc)
    if(NOT _tensorclass_torch_rc EQUAL 0)
      message(FATAL_ERROR "the wheel is built against the torch of ${Python_EXECUTABLE}, which cannot import it")
    endif()
    list(APPEND CMAKE_PREFIX_PATH "${_tensorclass_torch_prefix}")
  endif()
endmacro()

# After the targets: what the wheel adds to the installed tree.
function(tensorclass_wheel_install)
  # The header front end's clang resource dir (<stddef.h> and the other
  # compiler headers, of the clang it was built with), which tensorclass-gen
  # looks for at ../share/tensorclass/clang beside its executable, whichever
  # libclang it loads (docs/install.md). The headers of
  # other targets' intrinsics (ARM, RISC-V, POWER, s390, Hexagon,
  # WebAssembly, OpenCL: 17 of its 21 MB) stay out: the front end parses for
  # x86-64 hosts.
  if(TARGET tensorclass-gen AND TCGEN_CLANG_RESOURCE_DIR)
    install(DIRECTORY "${TCGEN_CLANG_RESOURCE_DIR}/include" DESTINATION ${CMAKE_INSTALL_DATADIR}/tensorclass/clang
      PATTERN "arm_*" EXCLUDE PATTERN "arm64*" EXCLUDE PATTERN "riscv_*" EXCLUDE PATTERN "altivec.h" EXCLUDE
      PATTERN "ppc_wrappers" EXCLUDE PATTERN "htm*intrin.h" EXCLUDE PATTERN "vecintrin.h" EXCLUDE
      PATTERN "s390intrin.h" EXCLUDE PATTERN "hexagon*" EXCLUDE PATTERN "hvx_*" EXCLUDE PATTERN "wasm_*" EXCLUDE
      PATTERN "opencl-c*" EXCLUDE PATTERN "msa.h" EXCLUDE)
  endif()
  # nlohmann/json, which the runtime's public headers include: the headers
  # it was built with (its inline namespace names their version), which the
  # package config gives its consumers (tensorclassConfig.cmake).
  get_target_property(_json_include nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
  find_path(TENSORCLASS_JSON_INCLUDE_DIR nlohmann/json.hpp HINTS ${_json_include} REQUIRED)
  install(DIRECTORY "${TENSORCLASS_JSON_INCLUDE_DIR}/nlohmann"
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tensorclass/third_party)
  foreach(_license /usr/share/doc/nlohmann-json3-dev/copyright "${TENSORCLASS_JSON_INCLUDE_DIR}/../share/doc/nlohmann_json/LICENSE.MIT")
    if(EXISTS "${_license}")
      install(FILES "${_license}" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tensorclass/third_party/nlohmann
        RENAME LICENSE)
      break()
    endif()
  endforeach()
endfunction()
