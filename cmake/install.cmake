# cmake --install installs libtuned, its headers, the tools and a package config, so that
# find_package(tuned) + target_link_libraries(app tuned::tuned) works.
include(CMakePackageConfigHelpers)
install(TARGETS tuned EXPORT tunedTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/tuned DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT tunedTargets NAMESPACE tuned:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tuned)
configure_package_config_file(cmake/tunedConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/tunedConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tuned)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tunedConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tunedConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/tunedConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tuned)
