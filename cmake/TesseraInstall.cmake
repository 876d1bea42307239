# Installs the CMake package so that consumers write find_package(Tessera) and link
# tessera::scheduler (an embedding host) or tessera::plugin_sdk (a plugin).
include(CMakePackageConfigHelpers)

set(TESSERA_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/Tessera")

install(EXPORT TesseraTargets
  NAMESPACE tessera::
  DESTINATION "${TESSERA_CMAKE_DIR}")

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/TesseraConfig.cmake.in"
  "${CMAKE_CURRENT_BINARY_DIR}/TesseraConfig.cmake"
  INSTALL_DESTINATION "${TESSERA_CMAKE_DIR}")
write_basic_package_version_file(
  "${CMAKE_CURRENT_BINARY_DIR}/TesseraConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)

install(FILES
  "${CMAKE_CURRENT_BINARY_DIR}/TesseraConfig.cmake"
  "${CMAKE_CURRENT_BINARY_DIR}/TesseraConfigVersion.cmake"
  DESTINATION "${TESSERA_CMAKE_DIR}")
