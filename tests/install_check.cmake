# Installs tuned into scratch prefixes and builds programs against each install as a user would,
# for both kinds of libtuned: this build's (static by default), and a second, small build of the
# other kind (library and tools only, no precompiled kernels: the linking, not the kernels, is what
# differs). For each install: the installed autotune and tunedb print the version; examples/ builds
# with find_package(tuned); a C program builds with `pkg-config --cflags --libs tuned` alone and
# prints tuned_version(), which must equal the headers' TUNED_VERSION_STRING and this project's
# version; a shared libtuned needs no libcudart.so. Run by ctest (test install_and_find_package):
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DSHARED=ON|OFF -DVERSION=x.y.z -DC_COMPILER=...
#         -DCUDA_LIBRARY_DIR=... -P install_check.cmake
set(work "${BUILD_DIR}/install-check")
file(REMOVE_RECURSE "${work}")
cmake_host_system_information(RESULT jobs QUERY NUMBER_OF_LOGICAL_CORES)
find_program(pkg_config NAMES pkg-config pkgconf)
if(NOT pkg_config)
  message(FATAL_ERROR "pkg-config is not installed (scripts/install_deps.sh installs it)")
endif()
find_program(readelf NAMES readelf)

function(run_checked what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

function(check_install build prefix kind)
  set(dir "${work}/${kind}")
  run_checked("cmake --install (${kind})" ${CMAKE_COMMAND} --install "${build}" --prefix "${prefix}")
  # CMAKE_INSTALL_LIBDIR of the build (lib, or lib64/lib/<triplet> on some systems).
  file(GLOB_RECURSE pc_files "${prefix}/*/tuned.pc")
  if(NOT pc_files)
    message(FATAL_ERROR "${kind}: no tuned.pc under ${prefix}")
  endif()
  list(GET pc_files 0 pc_file)
  get_filename_component(pc_dir "${pc_file}" DIRECTORY)
  get_filename_component(lib_dir "${pc_dir}" DIRECTORY)
  foreach(file "${prefix}/include/tuned/tuned.h" "${prefix}/include/tuned/version.h"
               "${prefix}/share/doc/tuned/LICENSE" "${lib_dir}/cmake/tuned/tunedConfig.cmake")
    if(NOT EXISTS "${file}")
      message(FATAL_ERROR "${kind}: ${file} was not installed")
    endif()
  endforeach()
  if(kind STREQUAL "shared")
    if(NOT EXISTS "${lib_dir}/libtuned.so" OR EXISTS "${lib_dir}/libtuned.a")
      message(FATAL_ERROR "shared: expected libtuned.so and no libtuned.a in ${lib_dir}")
    endif()
    if(readelf)
      run_checked("readelf libtuned.so" ${readelf} -d "${lib_dir}/libtuned.so")
      if(run_output MATCHES "libcudart")
        message(FATAL_ERROR "shared: libtuned.so needs a shared cudart:\n${run_output}")
      endif()
    endif()
  elseif(NOT EXISTS "${lib_dir}/libtuned.a")
    message(FATAL_ERROR "static: no libtuned.a in ${lib_dir}")
  endif()
  set(env ${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${lib_dir}:${CUDA_LIBRARY_DIR}")

  # The installed tools find their libtuned (a shared one through their run path).
  foreach(tool autotune tunedb)
    run_checked("${kind}: ${tool} --version" "${prefix}/bin/${tool}" --version)
    if(NOT run_output STREQUAL "${tool} (tuned) ${VERSION}\n")
      message(FATAL_ERROR "${kind}: ${tool} --version printed '${run_output}'")
    endif()
  endforeach()

  # find_package(tuned) from a separate project.
  run_checked("${kind}: configuring examples/ against the installed tuned"
              ${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples" -B "${dir}/example"
              "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release)
  run_checked("${kind}: building examples/ against the installed tuned"
              ${CMAKE_COMMAND} --build "${dir}/example" -j ${jobs})
  if(NOT EXISTS "${dir}/example/gemm_example")
    message(FATAL_ERROR "${kind}: gemm_example was not built")
  endif()

  # pkg-config alone: a C program (tuned.h is C) calling into the library.
  file(WRITE "${dir}/consumer.c" [=[
#include <stdio.h>
#include <string.h>
#include <tuned/tuned.h>
int main(void) {
  printf("%s %s %s\n", tuned_version(), TUNED_VERSION_STRING,
         tuned_status_string(TUNED_STATUS_SUCCESS));
  return strcmp(tuned_version(), TUNED_VERSION_STRING) != 0;
}
]=])
  set(pc_env ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${pc_dir}")
  run_checked("${kind}: pkg-config --modversion tuned" ${pc_env} ${pkg_config} --modversion tuned)
  if(NOT run_output STREQUAL "${VERSION}\n")
    message(FATAL_ERROR "${kind}: pkg-config --modversion tuned gave '${run_output}'")
  endif()
  run_checked("${kind}: pkg-config --cflags --libs tuned"
              ${pc_env} ${pkg_config} --cflags --libs tuned)
  string(STRIP "${run_output}" flags)
  message(STATUS "${kind}: pkg-config --cflags --libs tuned: ${flags}")
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run_checked("${kind}: compiling and linking a C program with pkg-config's flags"
              ${C_COMPILER} "${dir}/consumer.c" -o "${dir}/consumer" ${flags})
  run_checked("${kind}: running the pkg-config program" ${env} "${dir}/consumer")
  if(NOT run_output STREQUAL "${VERSION} ${VERSION} success\n")
    message(FATAL_ERROR "${kind}: the pkg-config program printed '${run_output}'")
  endif()
  message(STATUS "${kind}: installed tools, find_package and pkg-config consumers work")
endfunction()

if(SHARED)
  set(this_kind shared)
  set(other_kind static)
  set(other_shared OFF)
else()
  set(this_kind static)
  set(other_kind shared)
  set(other_shared ON)
endif()
check_install("${BUILD_DIR}" "${work}/${this_kind}/prefix" ${this_kind})

# The other kind: libtuned and the installed tools only, without precompiled kernels.
set(other_build "${work}/${other_kind}/build")
run_checked("configuring a ${other_kind} build" ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${other_build}"
            -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=${other_shared} -DTUNED_PRECOMPILE=OFF
            -DTUNED_BUILD_TESTS=OFF -DTUNED_BUILD_BENCH=OFF -DTUNED_BUILD_TOOLS=ON)
run_checked("building the ${other_kind} library and tools"
            ${CMAKE_COMMAND} --build "${other_build}" -j ${jobs} --target tuned autotune tunedb)
check_install("${other_build}" "${work}/${other_kind}/prefix" ${other_kind})
