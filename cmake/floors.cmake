# The floors of libtuned (docs/ARCHITECTURE.md, "Floors"). Each folder's code is a library of its
# own that sees its folder and the floors below it, and nothing else:
#
#   core                     keys, problem identity, the space language, device and cubin records,
#                            logging, CUDA error checks and RAII
#   generator  cache         NVRTC, kernels and their cache | the SQLite database, shipped data
#   templates                the ops (kernel templates, spaces, tasks, faces), over the generator
#   tuner                    strategies, sessions, the tuning policy
#   api                      the runtime and the C/C++ entry points
#   tools                    autotune, tunedb, precompile (bench/ and tests/ stand above all)
#
# Includes are written from the project root ("cache/database.hpp"). A floor's library is given,
# instead of the root, a view of it in the build tree holding links to its own folder and the ones
# below it only, so an include of a higher floor finds no file and fails the build. A shared
# library of each floor's objects with those below it is linked with --no-undefined, so a call
# into a higher floor (declared by hand, without its header) fails the build too.

# libtuned's floors, bottom up, and what each one may see below it (tools/ sees them all).
set(TUNED_LIBRARY_FLOORS core generator cache templates tuner api)
set(TUNED_FLOORS_BELOW_core "")
set(TUNED_FLOORS_BELOW_generator core)
set(TUNED_FLOORS_BELOW_cache core)
set(TUNED_FLOORS_BELOW_templates core generator)
set(TUNED_FLOORS_BELOW_tuner core generator cache templates)
set(TUNED_FLOORS_BELOW_api core generator cache templates tuner)
set(TUNED_FLOORS_BELOW_tools ${TUNED_LIBRARY_FLOORS})

# What every floor compiles with (the flags libtuned's code always had), and what libtuned's code
# links (kept apart: the tools see the floors but link libtuned, not these).
add_library(tuned_floor_base INTERFACE)
target_include_directories(tuned_floor_base INTERFACE
  ${PROJECT_SOURCE_DIR}/include ${TUNED_GENERATED_INCLUDE_DIR} ${TOMLPP_INCLUDE_DIR}
  ${ZSTD_INCLUDE_DIR})
target_compile_definitions(tuned_floor_base INTERFACE TOML_HEADER_ONLY=1)
target_compile_options(tuned_floor_base INTERFACE -Wall -Wextra)
add_library(tuned_floor_dependencies INTERFACE)
target_link_libraries(tuned_floor_dependencies INTERFACE
  CUDA::cudart_static CUDA::nvrtc ${CMAKE_DL_LIBS} SQLite::SQLite3 Threads::Threads
  OpenMP::OpenMP_CXX ${ZSTD_STATIC_LIBRARY})

# tuned_sees_<floor>: an interface target that gives a target the view of <floor> (its folder and
# the folders below it). Made for every floor up front, so that a probe can take any floor's view.
foreach(floor IN LISTS TUNED_LIBRARY_FLOORS ITEMS tools)
  set(view ${PROJECT_BINARY_DIR}/floors/${floor})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view})
  foreach(folder IN LISTS TUNED_FLOORS_BELOW_${floor} floor)  # the folders below, then its own
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${view}/${folder} SYMBOLIC)
  endforeach()
  add_library(tuned_sees_${floor} INTERFACE)
  target_include_directories(tuned_sees_${floor} INTERFACE ${view})
  target_link_libraries(tuned_sees_${floor} INTERFACE tuned_floor_base)
endforeach()

# tuned_floor_library(<floor> <sources...>): the floor's object library, tuned_<floor>, which
# libtuned is made of.
function(tuned_floor_library floor)
  add_library(tuned_${floor} OBJECT ${ARGN})
  target_link_libraries(tuned_${floor} PRIVATE tuned_sees_${floor} tuned_floor_dependencies)
endfunction()

# Every floor's objects: what libtuned is made of.
set(TUNED_FLOOR_OBJECTS "")
foreach(floor IN LISTS TUNED_LIBRARY_FLOORS)
  list(APPEND TUNED_FLOOR_OBJECTS $<TARGET_OBJECTS:tuned_${floor}>)
endforeach()

# The empty precompiled kernel table (generator/precompiled_none.cpp), for what links libtuned's
# objects without the built one: the link checks, tunedb's library, the precompile tool.
add_library(tuned_floor_no_kernels OBJECT ${PROJECT_SOURCE_DIR}/generator/precompiled_none.cpp)
target_link_libraries(tuned_floor_no_kernels PRIVATE tuned_sees_generator tuned_floor_dependencies)

# The link checks, once every floor is defined: tuned_floor_link_<floor> is a shared library of the
# floor's objects and those of the floors below it, with no undefined symbol left (from the
# generator floor up with the empty kernel table).
function(tuned_floor_link_checks)
  foreach(floor IN LISTS TUNED_LIBRARY_FLOORS)
    set(objects "")
    foreach(below IN LISTS TUNED_FLOORS_BELOW_${floor} floor)
      list(APPEND objects $<TARGET_OBJECTS:tuned_${below}>)
    endforeach()
    if(floor STREQUAL "generator" OR "generator" IN_LIST TUNED_FLOORS_BELOW_${floor})
      list(APPEND objects $<TARGET_OBJECTS:tuned_floor_no_kernels>)
    endif()
    add_library(tuned_floor_link_${floor} SHARED ${objects})
    target_link_libraries(tuned_floor_link_${floor} PRIVATE tuned_floor_dependencies)
    target_link_options(tuned_floor_link_${floor} PRIVATE "LINKER:--no-undefined")
    set_target_properties(tuned_floor_link_${floor} PROPERTIES
      LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/floors/link-check)
  endforeach()
endfunction()
