#===- test/InstallAndConsume.cmake - ctest's install-and-consume ----------===#
#
# cmake -P script: installs the build tree into a fresh prefix, then
# configures, builds and runs the two projects of examples/cpp against that
# prefix alone (find_package(flashc)), as a user's project would: the JIT
# example (flashc::compiler) and the C API example (flashc::runtime_c) on
# BUNDLE in the PTX simulator. Fails on the first step that fails.
#
# Variables: BUILD_DIR (the tree to install), SOURCE_DIR, WORK_DIR (this
# test's own directory: the prefix and the examples' build trees), BUNDLE,
# GENERATOR, and the compiler, launcher and linker flags to build the
# examples with (CXX_COMPILER, C_COMPILER, LAUNCHER, LINKER_FLAGS).
#
#===----------------------------------------------------------------------===#

foreach(var BUILD_DIR SOURCE_DIR WORK_DIR BUNDLE GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "InstallAndConsume.cmake needs -D${var}=...")
  endif()
endforeach()

function(run what)
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  string(TIMESTAMP end "%s")
  math(EXPR seconds "${end} - ${start}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install-and-consume: ${what} failed (${rc})")
  endif()
  message(STATUS "install-and-consume: ${what}: ${seconds} s")
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${prefix})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
# The installed tools start (they find MLIR's shared libraries).
run("installed flashc-opt --version" ${prefix}/bin/flashc-opt --version)

set(args -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_PREFIX_PATH=${prefix})
if(CXX_COMPILER)
  list(APPEND args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(C_COMPILER)
  list(APPEND args -DCMAKE_C_COMPILER=${C_COMPILER})
endif()
if(LAUNCHER)
  list(APPEND args "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}"
    "-DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
if(LINKER_FLAGS)
  list(APPEND args "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")
endif()

foreach(example jit-attention runtime-c-api)
  set(build ${WORK_DIR}/${example})
  # A fresh configure each time (a cached flashc_DIR would hide a broken
  # install), over a tree whose objects ccache keeps.
  file(REMOVE ${build}/CMakeCache.txt)
  run("configure ${example}" ${CMAKE_COMMAND} -S
    ${SOURCE_DIR}/examples/cpp/${example} -B ${build} ${args})
  run("build ${example}" ${CMAKE_COMMAND} --build ${build})
endforeach()

run("run jit-attention" ${WORK_DIR}/jit-attention/jit-attention)
run("run runtime-c-api" ${WORK_DIR}/runtime-c-api/runtime-c-api ${BUNDLE})

# The C API example again, built by the compiler alone with pkg-config's
# flags (flashc-runtime.pc), where pkg-config is installed.
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
if(PKG_CONFIG AND C_COMPILER)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs flashc-runtime
    OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install-and-consume: pkg-config flashc-runtime failed")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run("cc with pkg-config flags" ${C_COMPILER} -std=c99
    ${SOURCE_DIR}/examples/cpp/runtime-c-api/main.c ${flags} -lm
    -Wl,-rpath,${prefix}/lib -o ${WORK_DIR}/runtime-c-api-pkg-config)
  run("run runtime-c-api (pkg-config)" ${WORK_DIR}/runtime-c-api-pkg-config
    ${BUNDLE})
else()
  message(STATUS "install-and-consume: no pkg-config: its check skipped")
endif()
