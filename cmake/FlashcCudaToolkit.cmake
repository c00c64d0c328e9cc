#===- cmake/FlashcCudaToolkit.cmake - The optional CUDA toolkit -----------===#
#
# flashc builds and runs without the CUDA toolkit: the runtime declares the
# driver API it loads at run time itself (lib/Runtime/CudaDriverApi.h), and
# GPU kernels are emitted as PTX, which the CUDA driver or flashc's PTX
# simulator runs. The toolkit adds checks when it is there:
#
#   ptxas  assembles PTX to cubins (`flashc bundle` without --no-assemble,
#          `flashc compile --emit cubin|manifest`): the tests that need it
#          are skipped without it (lit: REQUIRES: ptxas; ctest: skipped
#          with the reason);
#   nvcc   (from the toolkit or PATH) compiles the PTX simulator's CUDA test kernels (tests skipped
#          without it);
#   cuda.h the build checks the runtime's driver declarations against it.
#
# FLASHC_CUDA_TOOLKIT_DIR is the toolkit flashc assembles with by default
# (the compiler's `toolkit=` option overrides it). Unset, it is the first
# of $CUDA_HOME, /usr/local/cuda and /opt/flashc-cuda/toolkit (where
# scripts/install-deps.sh puts NVIDIA's ptxas from PyPI) that has
# bin/ptxas, else /usr/local/cuda.
#
# FLASHC_USE_CUDA_TOOLKIT=OFF builds and tests as on a machine without the
# toolkit even where there is one: none of the three is looked for, and
# flashc's default toolkit is a path that does not exist, so that
# assembling fails with an error naming it.
#
# Sets FLASHC_DEFAULT_CUDA_TOOLKIT, and FLASHC_PTXAS, FLASHC_NVCC,
# FLASHC_CUDA_H and FLASHC_NVDISASM (each empty when absent or hidden).
# nvdisasm, for the static performance model of docs/KERNELS.md, is first
# the pinned copy that scripts/install-deps.sh installs from PyPI (so that
# the table does not depend on the toolkit's version), else the toolkit's.
#
#===----------------------------------------------------------------------===#

option(FLASHC_USE_CUDA_TOOLKIT
  "Use the CUDA toolkit's ptxas, nvcc and cuda.h where they are (OFF: build and test as without the toolkit)"
  ON)
set(FLASHC_CUDA_TOOLKIT_DIR "" CACHE PATH
  "The CUDA toolkit flashc assembles with by default (empty: found)")

set(FLASHC_PTXAS "")
set(FLASHC_NVCC "")
set(FLASHC_CUDA_H "")
set(FLASHC_NVDISASM "")
if(FLASHC_USE_CUDA_TOOLKIT)
  set(toolkit "${FLASHC_CUDA_TOOLKIT_DIR}")
  if(NOT toolkit)
    set(toolkit /usr/local/cuda)
    foreach(candidate "$ENV{CUDA_HOME}" /usr/local/cuda /opt/flashc-cuda/toolkit)
      if(candidate AND EXISTS "${candidate}/bin/ptxas")
        set(toolkit "${candidate}")
        break()
      endif()
    endforeach()
  endif()
  set(FLASHC_DEFAULT_CUDA_TOOLKIT "${toolkit}")
  if(EXISTS "${toolkit}/bin/ptxas")
    set(FLASHC_PTXAS "${toolkit}/bin/ptxas")
  endif()
  # nvcc from the toolkit, else from PATH.
  find_program(FLASHC_NVCC_PROGRAM nvcc HINTS "${toolkit}/bin" NO_CACHE)
  if(FLASHC_NVCC_PROGRAM)
    set(FLASHC_NVCC "${FLASHC_NVCC_PROGRAM}")
  endif()
  if(EXISTS "${toolkit}/include/cuda.h")
    set(FLASHC_CUDA_H "${toolkit}/include/cuda.h")
  endif()
  foreach(candidate /opt/flashc-cuda/nvdisasm/nvidia/cu13/bin/nvdisasm
                    "${toolkit}/bin/nvdisasm")
    if(EXISTS "${candidate}")
      set(FLASHC_NVDISASM "${candidate}")
      break()
    endif()
  endforeach()
  unset(toolkit)
else()
  # A path, not a message: it goes into pass options (no spaces).
  set(FLASHC_DEFAULT_CUDA_TOOLKIT /nonexistent/flashc-built-without-cuda-toolkit)
endif()

foreach(tool ptxas nvcc cuda.h nvdisasm)
  string(TOUPPER "FLASHC_${tool}" var)
  string(REPLACE "." "_" var "${var}")
  if(${var})
    message(STATUS "CUDA toolkit: ${tool}: ${${var}}")
  elseif(FLASHC_USE_CUDA_TOOLKIT)
    message(STATUS "CUDA toolkit: ${tool}: not found in "
                   "${FLASHC_DEFAULT_CUDA_TOOLKIT}; the checks that need it "
                   "are skipped")
  else()
    message(STATUS "CUDA toolkit: ${tool}: hidden (FLASHC_USE_CUDA_TOOLKIT=OFF); "
                   "the checks that need it are skipped")
  endif()
endforeach()
