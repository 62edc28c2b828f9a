# Helpers that keep each module, tool and test declaration to a few lines:
#   toolkit_add_module(<name> SOURCES ... [CUDA_SOURCES ...] [DEPS ...])  -> core::<name>
#   toolkit_add_tool(<exe> SOURCES ... [DEPS ...])                        -> bin/<exe>
#   toolkit_add_test(<name> SOURCES ... [DEPS ...] LABELS ...)            -> doctest binary + ctest entry
#   toolkit_add_mpi_test(<name> SOURCES ... [DEPS ...] NP 2 4)            -> one ctest entry per rank count
set(TOOLKIT_DATASETS_DIR "${PROJECT_SOURCE_DIR}/../shared/datasets" CACHE PATH "Shared real datasets")

function(toolkit_add_subdirectories parent)
  file(GLOB _children LIST_DIRECTORIES true "${CMAKE_CURRENT_SOURCE_DIR}/${parent}/*")
  list(SORT _children)
  foreach(_child IN LISTS _children)
    if(IS_DIRECTORY "${_child}" AND EXISTS "${_child}/CMakeLists.txt")
      add_subdirectory("${_child}")
    endif()
  endforeach()
endfunction()

function(toolkit_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;CUDA_SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(_sources ${ARG_SOURCES})
  if(TOOLKIT_HAVE_CUDA)
    list(APPEND _sources ${ARG_CUDA_SOURCES})
  endif()
  add_library(core_${name} STATIC ${_sources})
  add_library(core::${name} ALIAS core_${name})
  target_include_directories(core_${name} PUBLIC "${PROJECT_SOURCE_DIR}/libcore")
  target_link_libraries(core_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  if(TOOLKIT_HAVE_CUDA AND ARG_CUDA_SOURCES)
    # Each device source stays an archive member of its own, out of unity batches: a binary that never
    # touches the device (or the SIMT emulator's tests, which replace the runtime and the kernels by host
    # versions) must not pull device code in through a batch it needs for a host symbol.
    set_source_files_properties(${ARG_CUDA_SOURCES} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    target_compile_definitions(core_${name} PUBLIC TOOLKIT_HAVE_CUDA=1)
    set_target_properties(core_${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
endfunction()

function(toolkit_add_tool name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE core::common ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/bin")
  set_property(GLOBAL APPEND PROPERTY TOOLKIT_TOOL_LIST ${name})
  get_property(_tools GLOBAL PROPERTY TOOLKIT_TOOL_LIST)
  set(TOOLKIT_TOOLS "${_tools}" CACHE INTERNAL "")
endfunction()

function(_toolkit_test_env out)
  set(${out}
    "TOOLKIT_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
    "TOOLKIT_BIN_DIR=${PROJECT_BINARY_DIR}/bin"
    "TOOLKIT_DATASETS=${TOOLKIT_DATASETS_DIR}"
    "TOOLKIT_TEST_TMP=${PROJECT_BINARY_DIR}/test-tmp"
    # ctest runs tests side by side (-j): a tool a test runs takes one thread unless the test gives threads=N
    # (every command's `threads` = 0 means OMP_NUM_THREADS, else all cores: common/threads.hpp).
    "OMP_NUM_THREADS=1"
    PARENT_SCOPE)
endfunction()

function(_toolkit_test_binary name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE core_test_support ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests")
endfunction()

function(toolkit_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  _toolkit_test_binary(${name} SOURCES ${ARG_SOURCES} DEPS ${ARG_DEPS})
  add_test(NAME ${name} COMMAND ${name})
  _toolkit_test_env(_env)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" SKIP_RETURN_CODE 77
    ENVIRONMENT "${_env}" TIMEOUT ${ARG_TIMEOUT})
endfunction()

function(toolkit_add_mpi_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;NP;LABELS" ${ARGN})
  if(NOT TOOLKIT_HAVE_MPI)
    return()
  endif()
  _toolkit_test_binary(${name} SOURCES ${ARG_SOURCES} DEPS ${ARG_DEPS})
  _toolkit_test_env(_env)
  list(APPEND _env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1)
  foreach(_np IN LISTS ARG_NP)
    add_test(NAME ${name}_np${_np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_np} --oversubscribe ${MPIEXEC_PREFLAGS}
              $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS})
    set_tests_properties(${name}_np${_np} PROPERTIES LABELS "mpi;${ARG_LABELS}" SKIP_RETURN_CODE 77
      ENVIRONMENT "${_env}" TIMEOUT 300 PROCESSORS ${_np})
  endforeach()
endfunction()
