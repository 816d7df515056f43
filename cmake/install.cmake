# cmake --install installs libtuned (static, or shared with -DBUILD_SHARED_LIBS=ON), its headers
# (version.h generated), the tools, a CMake package and tuned.pc, so that find_package(tuned) +
# target_link_libraries(app tuned::tuned), or `pkg-config --cflags --libs tuned`, works.
include(CMakePackageConfigHelpers)
install(TARGETS tuned EXPORT tunedTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/tuned DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${TUNED_GENERATED_INCLUDE_DIR}/tuned/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tuned)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(EXPORT tunedTargets NAMESPACE tuned:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tuned)
if(TUNED_LIBRARY_TYPE STREQUAL "SHARED_LIBRARY")
  set(TUNED_SHARED_LIBS ON)
else()
  set(TUNED_SHARED_LIBS OFF)
endif()
configure_package_config_file(cmake/tunedConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/tunedConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tuned)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tunedConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tunedConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/tunedConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tuned)

# tuned.pc. Cflags name the CUDA headers (tuned.h includes cuda_runtime_api.h). libtuned.so needs
# nothing more to link; libtuned.a needs what it links (cudart_static, NVRTC, cuBLAS, SQLite, zstd,
# OpenMP, the C++ library), listed in Libs, not Libs.private, as there is no shared library to link
# instead.
function(tuned_pc_link_flags out)  # -L/-l flags for library files and names, system dirs left out
  set(flags "")
  set(dirs "")
  set(names "")
  foreach(lib IN LISTS ARGN)
    if(IS_ABSOLUTE "${lib}")
      get_filename_component(dir "${lib}" DIRECTORY)
      get_filename_component(name "${lib}" NAME_WE)
      string(REGEX REPLACE "^lib" "" name "${name}")
      if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES AND NOT dir IN_LIST dirs)
        list(APPEND dirs "${dir}")
        string(APPEND flags " -L${dir}")
      endif()
    else()
      set(name "${lib}")
    endif()
    if(NOT name IN_LIST names)
      list(APPEND names "${name}")
      string(APPEND flags " -l${name}")
    endif()
  endforeach()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()
set(TUNED_PC_CFLAGS "")
foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
  string(APPEND TUNED_PC_CFLAGS " -I${dir}")
endforeach()
if(TUNED_SHARED_LIBS)
  set(TUNED_PC_KIND "shared")
  set(TUNED_PC_LIBS "")
else()
  set(TUNED_PC_KIND "static")
  set(openmp_libs "")
  foreach(name IN LISTS OpenMP_CXX_LIB_NAMES)
    list(APPEND openmp_libs "${OpenMP_${name}_LIBRARY}")
  endforeach()
  tuned_pc_link_flags(TUNED_PC_LIBS ${CUDAToolkit_LIBRARY_DIR}/libcudart_static.a
                      ${CUDAToolkit_LIBRARY_DIR}/libnvrtc.so
                      ${SQLite3_LIBRARIES} ${ZSTD_STATIC_LIBRARY} ${openmp_libs} pthread dl
                      rt stdc++ m)
endif()
# The prefix is the one installed to (cmake --install --prefix): filled in at install time.
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(TUNED_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(TUNED_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(TUNED_PC_PREFIX "@TUNED_PC_PREFIX@")  # kept for the install step
configure_file(cmake/tuned.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tuned.pc.in @ONLY)
install(CODE "
  set(TUNED_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${CMAKE_CURRENT_BINARY_DIR}/tuned.pc.in\" \"${CMAKE_CURRENT_BINARY_DIR}/tuned.pc\"
                 @ONLY)")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tuned.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
