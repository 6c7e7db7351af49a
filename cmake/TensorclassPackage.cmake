# Installs the runtime as a CMake package: find_package(tensorclass CONFIG)
# gives tensorclass::runtime (and tensorclass::gen when the generator is built).
include(CMakePackageConfigHelpers)

set(TENSORCLASS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tensorclass)

install(EXPORT tensorclassTargets
  NAMESPACE tensorclass::
  DESTINATION ${TENSORCLASS_CMAKE_DIR})

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
  DESTINATION ${TENSORCLASS_CMAKE_DIR})

# The documentation a user of the installed package needs: the tour, the
# schema language and the on-disk formats.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/generator/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME schema-language.md)
install(FILES ${PROJECT_SOURCE_DIR}/docs/formats.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
