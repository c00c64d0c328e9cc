#===- cmake/FlashcInstall.cmake - Install rules and find_package(flashc) --===#
#
# `cmake --install <build> --prefix P` puts into P:
#
#   include/flashc/...              the public headers, with the generated
#                                   ones (*.h.inc, Config.h);
#   lib/libFlashc*.a                the compiler's and the runtime's static
#                                   libraries (the compiler's are shared,
#                                   libFlashc*.so, with BUILD_SHARED_LIBS);
#   lib/libflashc_runtime.so.0      the runtime's C API (flashc_runtime.h);
#   lib/pkgconfig/flashc-runtime.pc its pkg-config file;
#   bin/flashc, flashc-bench, flashc-opt, flashc-ptxsim, flashc-gpucheck;
#   lib/cmake/flashc/               flashcConfig.cmake, its version file and
#                                   the exported targets.
#
# A CMake project then uses flashc with find_package(flashc) (P on
# CMAKE_PREFIX_PATH) and these imported targets:
#
#   flashc::compiler   the JIT compiler (flashc/Compiler/JIT.h), with the
#                      MLIR and LLVM include directories and shared
#                      libraries of the MLIR flashc was built with;
#   flashc::runtime    the LLVM-free C++ runtime (flashc/Runtime/Runtime.h);
#   flashc::runtime_c  the C API (flashc/Runtime/flashc_runtime.h);
#   flashc::simulator, flashc::support
#                      the PTX simulator and the support code.
#
# A runtime-only build (FLASHC_RUNTIME_ONLY) installs the runtime's part.
# examples/cpp/ holds a project for each of flashc::compiler and
# flashc::runtime_c; ctest's install-and-consume builds them against an
# installed copy.
#
#===----------------------------------------------------------------------===#

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FLASHC_INSTALL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/flashc)

# Headers: those of the parts built (with the .def tables they include),
# and the generated ones.
if(TARGET FlashcCompiler)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/flashc
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
  install(DIRECTORY ${PROJECT_BINARY_DIR}/include/flashc
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h.inc"
    PATTERN "CMakeFiles" EXCLUDE)
else()
  foreach(dir Core Runtime Simulator Support)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/flashc/${dir}
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashc
      FILES_MATCHING PATTERN "*.h")
  endforeach()
endif()
install(FILES ${PROJECT_BINARY_DIR}/include/flashc/Config.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashc)

# Libraries, exported under the flashc:: namespace. The build itself
# reaches the headers through directory-wide include paths; the installed
# targets carry the installed include directory.
set(FLASHC_EXPORTED_TARGETS FlashcSupport FlashcCore FlashcSimulator
  FlashcRuntime flashc_runtime)
set_target_properties(FlashcSupport PROPERTIES EXPORT_NAME support)
set_target_properties(FlashcCore PROPERTIES EXPORT_NAME core)
set_target_properties(FlashcSimulator PROPERTIES EXPORT_NAME simulator)
set_target_properties(FlashcRuntime PROPERTIES EXPORT_NAME runtime)
set_target_properties(flashc_runtime PROPERTIES EXPORT_NAME runtime_c)
foreach(target FlashcSupport FlashcCore FlashcSimulator FlashcRuntime)
  target_compile_features(${target} INTERFACE cxx_std_17)
endforeach()
set(FLASHC_HAS_COMPILER OFF)
if(TARGET FlashcCompiler)
  set(FLASHC_HAS_COMPILER ON)
  # Every library FlashcCompiler links, each exported under its own name
  # (flashc::FlashcCompiler and so on), and flashc::compiler over them.
  set(FLASHC_COMPILER_LIBRARIES
    FlashcTarget FlashcAnalysis FlashcFlashDialect FlashcFlashTileDialect
    FlashcFlashTileTransforms FlashcFlashTransforms
    FlashcFlashToCPU FlashcFlashToTile FlashcFlashTileToNVGPU FlashcPipelines
    FlashcInit
    FlashcCompiler)
  list(APPEND FLASHC_EXPORTED_TARGETS ${FLASHC_COMPILER_LIBRARIES})
  # Shared (BUILD_SHARED_LIBS), the installed libraries find MLIR's and
  # LLVM's shared libraries where they were linked from, as the tools do.
  set_target_properties(${FLASHC_COMPILER_LIBRARIES} PROPERTIES
    INSTALL_RPATH_USE_LINK_PATH ON)
  add_library(flashc_compiler INTERFACE)
  set_target_properties(flashc_compiler PROPERTIES EXPORT_NAME compiler)
  target_link_libraries(flashc_compiler INTERFACE FlashcCompiler)
  # The JIT's API is LLVM's (llvm::Expected, llvm::Error): its users call
  # LLVM's support library, which shared flashc libraries
  # (BUILD_SHARED_LIBS) link privately.
  if(LLVM_LINK_LLVM_DYLIB)
    target_link_libraries(flashc_compiler INTERFACE LLVM)
  else()
    target_link_libraries(flashc_compiler INTERFACE LLVMSupport)
  endif()
  target_compile_features(flashc_compiler INTERFACE cxx_std_17)
  list(APPEND FLASHC_EXPORTED_TARGETS flashc_compiler)
endif()
foreach(target ${FLASHC_EXPORTED_TARGETS})
  target_include_directories(${target} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
install(TARGETS ${FLASHC_EXPORTED_TARGETS} EXPORT flashcTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT flashcTargets
  NAMESPACE flashc::
  DESTINATION ${FLASHC_INSTALL_CMAKE_DIR})

# Tools.
set(FLASHC_INSTALLED_TOOLS flashc-ptxsim flashc-gpucheck)
if(TARGET flashc)
  list(APPEND FLASHC_INSTALLED_TOOLS flashc flashc-bench flashc-opt)
endif()
# The installed tools find MLIR's and LLVM's shared libraries where they
# were linked from.
set_target_properties(${FLASHC_INSTALLED_TOOLS} PROPERTIES
  INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS ${FLASHC_INSTALLED_TOOLS}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# flashcConfig.cmake and its version file (0.x: same minor version).
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/flashcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/flashcConfig.cmake
  INSTALL_DESTINATION ${FLASHC_INSTALL_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/flashcConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/flashcConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/flashcConfigVersion.cmake
  DESTINATION ${FLASHC_INSTALL_CMAKE_DIR})

# pkg-config, for the C API; its prefix is found from its own place, so
# that the file holds for any install prefix.
file(RELATIVE_PATH FLASHC_PC_PREFIX_FROM_PCDIR
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" FLASHC_PC_PREFIX_FROM_PCDIR
  "${FLASHC_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/flashc-runtime.pc.in
  ${PROJECT_BINARY_DIR}/cmake/flashc-runtime.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/flashc-runtime.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
