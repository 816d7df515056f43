# Installs this build into a scratch prefix and builds examples/ against it with find_package(tuned),
# as a user would. Run by ctest (test install_and_find_package).
set(prefix "${BUILD_DIR}/install-check/prefix")
set(example_build "${BUILD_DIR}/install-check/example")
file(REMOVE_RECURSE "${BUILD_DIR}/install-check")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples" -B "${example_build}"
                        "-DCMAKE_PREFIX_PATH=${prefix}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring examples/ against the installed tuned failed:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${example_build}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building examples/ against the installed tuned failed:\n${out}")
endif()
if(NOT EXISTS "${example_build}/gemm_example")
  message(FATAL_ERROR "gemm_example was not built")
endif()
message(STATUS "installed tuned found by find_package; gemm_example built")
