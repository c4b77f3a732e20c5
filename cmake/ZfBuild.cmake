# Build helpers shared by every zerofleet target.
#
# Options:
#   ZF_SANITIZE     ""  | "address,undefined" | "thread": instrument our targets and tests.
#   ZF_BUILD_TOOLS  ON: build the `zf` command and cross-process tests (OFF for the sanitizer
#                   build, which only runs the LibTorch-free unit tests).
#   ZF_WERROR       ON: warnings are errors on our own targets (never on generated code).
#   ZF_LIBSTDCXX_FIRST  OFF: ON makes every executable name libstdc++ before any other library
#                   (for PyTorch's pip-wheel LibTorch; see below). scripts/gpu-build sets it.

set(ZF_SANITIZE "" CACHE STRING "Sanitizers for our targets, e.g. address,undefined")
option(ZF_BUILD_TOOLS "Build the zf command and cross-process tests" ON)
option(ZF_WERROR "Treat warnings as errors on zerofleet targets" ON)

# PyTorch's pip wheels (2.5 and later; seen with 2.11) export from libtorch_cpu.so a static copy
# of libstdc++'s std::filesystem (pytorch/pytorch#133437). An executable whose libraries list
# libtorch before libstdc++ binds its std::filesystem calls to that copy: on an H100 machine with
# torch 2.11.0+cu130 (2026-11-26) every std::filesystem::remove_all of a non-empty directory
# jumped to address 0 (the GPU tests, learner_bench, zf bench selfplay). Naming libstdc++ first
# makes the system's definitions win for the executable and for libtorch alike.
option(ZF_LIBSTDCXX_FIRST "Name libstdc++ first in every executable (PyTorch pip wheels)" OFF)
if(ZF_LIBSTDCXX_FIRST)
  add_link_options("LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")
endif()

find_program(ZF_CCACHE ccache)
if(ZF_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${ZF_CCACHE}")
  set(CMAKE_C_COMPILER_LAUNCHER "${ZF_CCACHE}")
endif()

if(ZF_SANITIZE)
  add_compile_options(-fsanitize=${ZF_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${ZF_SANITIZE})
endif()

# Warnings for code we write. Generated code and third-party headers are exempt.
function(zf_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter
                                           -Wno-missing-field-initializers)
  if(ZF_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# zf_library(NAME SOURCES a.cc b.cc DEPS dep1 dep2 [HEADER_ONLY])
# One library target per component; includes are rooted at the repository.
function(zf_library name)
  cmake_parse_arguments(ARG "HEADER_ONLY" "" "SOURCES;DEPS" ${ARGN})
  if(ARG_HEADER_ONLY)
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  else()
    add_library(${name} STATIC ${ARG_SOURCES})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${ARG_DEPS})
    zf_warnings(${name})
  endif()
endfunction()

# zf_test(NAME SOURCES x_test.cc DEPS ... LABELS unit [TIMEOUT s])
# One GoogleTest executable per test file, registered with ctest and labelled
# (unit, integration, e2e, gpu, slow).
function(zf_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  zf_warnings(${name})
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()
