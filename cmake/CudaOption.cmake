# Resolves KVSERVE_CUDA (AUTO|ON|OFF) into KVSERVE_WITH_CUDA and enables the
# CUDA language when it is on. CUDA builds for sm_90a (H100/H200) only by
# default: the build machines have 2 cores, and each extra architecture
# doubles the device-code compile time. Override with
# -DCMAKE_CUDA_ARCHITECTURES=...
string(TOUPPER "${KVSERVE_CUDA}" _kvserve_cuda)
set(KVSERVE_WITH_CUDA OFF)
if(NOT _kvserve_cuda STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(KVSERVE_WITH_CUDA ON)
  elseif(_kvserve_cuda STREQUAL "ON")
    message(FATAL_ERROR "KVSERVE_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()

if(KVSERVE_WITH_CUDA)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90a)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "kvserve: CUDA backend ON (archs ${CMAKE_CUDA_ARCHITECTURES}, nvcc ${CMAKE_CUDA_COMPILER_VERSION})")
else()
  message(STATUS "kvserve: CUDA backend OFF (KVSERVE_CUDA=${KVSERVE_CUDA})")
endif()
