# The CUDA backend: enabled when nvcc is found (ZT_CUDA=AUTO), required (ON) or skipped (OFF).
# Sets ZT_HAVE_CUDA and, when on, the imported target zt::nccl and the CUDA language.
#
# Architectures: CUDA 13 dropped sm_70, so the default is 80;90 (A100, H100/H200). V100 users
# build with a CUDA 12.x toolkit and -DCMAKE_CUDA_ARCHITECTURES=70; the kernels keep bf16 and
# sm_80-only instructions behind __CUDA_ARCH__ guards so that build stays valid.
set(ZT_HAVE_CUDA OFF)
if(ZT_CUDA STREQUAL "OFF")
  message(STATUS "CUDA backend: off (ZT_CUDA=OFF)")
  return()
endif()

if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(ZT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ZT_CUDA=ON but no CUDA compiler (nvcc) was found; set CUDACXX or "
                        "CMAKE_CUDA_COMPILER")
  endif()
  message(STATUS "CUDA backend: off (no nvcc found)")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 80 90)
endif()
enable_language(CUDA)
# CMake 3.25 predates nvcc's C++20 dialect (CUDA_STANDARD 20 fails to generate): teach it the
# flag, which nvcc accepts since CUDA 12.0.
if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0 AND NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)
find_package(CUDAToolkit REQUIRED)

# CMake 3.25 ships no NCCL package: look for the header and library next to the toolkit.
find_path(ZT_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
          PATH_SUFFIXES include)
find_library(ZT_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
             PATH_SUFFIXES lib64 lib)
if(NOT ZT_NCCL_INCLUDE OR NOT ZT_NCCL_LIB)
  message(FATAL_ERROR "CUDA backend: NCCL (nccl.h, libnccl) not found under ${CUDAToolkit_LIBRARY_ROOT}; "
                      "install it or configure with -DZT_CUDA=OFF")
endif()
add_library(zt::nccl UNKNOWN IMPORTED)
set_target_properties(zt::nccl PROPERTIES IMPORTED_LOCATION ${ZT_NCCL_LIB}
                                          INTERFACE_INCLUDE_DIRECTORIES ${ZT_NCCL_INCLUDE})

# CUB (with Thrust and libcu++) comes as the CCCL package inside the toolkit.
find_package(CCCL CONFIG REQUIRED HINTS ${CUDAToolkit_LIBRARY_DIR}/cmake
             ${CUDAToolkit_LIBRARY_ROOT}/lib/cmake ${CUDAToolkit_LIBRARY_ROOT}/lib64/cmake)

set(ZT_HAVE_CUDA ON)
message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
               "${CMAKE_CUDA_ARCHITECTURES}, NCCL ${ZT_NCCL_LIB})")
