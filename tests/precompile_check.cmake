# Runs the build's precompiler (its first few kernels) twice, from two working directories into
# two output directories, and requires byte-identical images (compressed, with the dictionary
# trained on them): no path of the build, and no thread's timing, may reach precompiled.bin. Run by
# ctest (test precompiled_images_reproducible).
#   cmake -DPRECOMPILE=<tuned_precompile> -DWORK_DIR=<scratch> -P precompile_check.cmake
set(kernels 6)  # fastCover trains a dictionary on five or more: that path too
file(REMOVE_RECURSE "${WORK_DIR}")
foreach(run a bb)
  file(MAKE_DIRECTORY "${WORK_DIR}/cwd-${run}")
  execute_process(COMMAND "${PRECOMPILE}" --out-dir "${WORK_DIR}/out-${run}/precompiled"
                          --max-kernels ${kernels} --jobs 2
                  WORKING_DIRECTORY "${WORK_DIR}/cwd-${run}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "precompile failed (${rc}):\n${out}")
  endif()
  message(STATUS "${run}: ${out}")
endforeach()
file(SIZE "${WORK_DIR}/out-a/precompiled/precompiled.bin" size)
if(size EQUAL 0)
  message(FATAL_ERROR "precompile wrote no image")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK_DIR}/out-a/precompiled/precompiled.bin"
                        "${WORK_DIR}/out-bb/precompiled/precompiled.bin"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the images built in ${WORK_DIR}/out-a and ${WORK_DIR}/out-bb differ")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "${kernels} kernels built in two directories: identical images (${size} bytes)")
