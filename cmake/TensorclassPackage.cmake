# Installs the runtime as a CMake package: find_package(tensorclass CONFIG)
# gives tensorclass::runtime (and tensorclass::gen when the generator is built).
include(CMakePackageConfigHelpers)

set(TENSORCLASS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tensorclass)

install(EXPORT tensorclassTargets
  NAMESPACE tensorclass::
  DESTINATION ${TENSORCLASS_CMAKE_DIR})

# The Arrow C++ so version tensorclass::arrow was built with, which the
# package config asks for again.
if(TARGET TensorclassArrow::arrow)
  get_target_property(TENSORCLASS_ARROW_SO_VERSION TensorclassArrow::arrow TENSORCLASS_ARROW_SO_VERSION)
endif()
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/tensorclassConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tensorclassConfig.cmake
  INSTALL_DESTINATION ${TENSORCLASS_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/tensorclassConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)

install(FILES
  ${PROJECT_BINARY_DIR}/tensorclassConfig.cmake
  ${PROJECT_BINARY_DIR}/tensorclassConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TensorclassGenerate.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TensorclassTorch.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TensorclassArrow.cmake
  DESTINATION ${TENSORCLASS_CMAKE_DIR})

# The documentation a user of the installed package needs: the tour, the
# schema language, the on-disk formats and the measured performance, with
# their links to one another rewritten to the installed names (and links to
# files that are not installed reduced to their text), so that every link
# resolves in the installed tree.
include(${PROJECT_SOURCE_DIR}/cmake/TensorclassInstallDocs.cmake)
tensorclass_install_docs(DESTINATION ${CMAKE_INSTALL_DOCDIR} DOCS
  README.md=README.md
  generator/README.md=schema-language.md
  docs/formats.md=formats.md
  docs/install.md=install.md
  tests/benchmarks/README.md=benchmarks.md)
