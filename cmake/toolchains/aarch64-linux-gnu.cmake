# Cross-compiles OAR for 64-bit ARM Linux (aarch64) with Debian's
# g++-aarch64-linux-gnu against the sysroot scripts/make-arm64-sysroot.sh makes
# from Debian's arm64 packages, and runs what the build runs (gtest discovery,
# ctest) under qemu-aarch64 (Debian's qemu-user) with that sysroot:
#
#   scripts/make-arm64-sysroot.sh
#   cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# OAR_ARM64_SYSROOT (cache variable or environment) chooses another sysroot;
# OAR_QEMU_CPU a CPU model for qemu (default: its `max` CPU, every feature it
# emulates: NEON, fp16, bf16, SVE...). On a real aarch64 machine none of this
# is needed: a native build is a plain `cmake -S . -B build`.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

if(NOT OAR_ARM64_SYSROOT)
  if(DEFINED ENV{OAR_ARM64_SYSROOT})
    set(OAR_ARM64_SYSROOT "$ENV{OAR_ARM64_SYSROOT}")
  elseif(DEFINED ENV{XDG_CACHE_HOME})
    set(OAR_ARM64_SYSROOT "$ENV{XDG_CACHE_HOME}/oar/sysroot-arm64")
  else()
    set(OAR_ARM64_SYSROOT "$ENV{HOME}/.cache/oar/sysroot-arm64")
  endif()
endif()
set(OAR_ARM64_SYSROOT "${OAR_ARM64_SYSROOT}" CACHE PATH "The aarch64 sysroot (scripts/make-arm64-sysroot.sh)")
if(NOT EXISTS "${OAR_ARM64_SYSROOT}/usr/include/stdio.h")
  message(FATAL_ERROR "no aarch64 sysroot at ${OAR_ARM64_SYSROOT}: run scripts/make-arm64-sysroot.sh")
endif()
# try_compile projects see the same sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES OAR_ARM64_SYSROOT OAR_QEMU_CPU)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_SYSROOT "${OAR_ARM64_SYSROOT}")

# Libraries and headers only from the sysroot, programs (glslc, mpicc,
# python...) only from the host.
set(CMAKE_FIND_ROOT_PATH "${OAR_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config, where a find module asks it, reads the sysroot's .pc files.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${OAR_ARM64_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${OAR_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${OAR_ARM64_SYSROOT}/usr/share/pkgconfig")

# The sysroot's libraries need each other at link time (libarchive's
# dependencies, OpenBLAS's libgfortran): the linker finds them there.
set(_oar_rpath_link "-Wl,-rpath-link,${OAR_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu,-rpath-link,${OAR_ARM64_SYSROOT}/lib/aarch64-linux-gnu")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_oar_rpath_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_oar_rpath_link}")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "${_oar_rpath_link}")

find_program(OAR_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(OAR_QEMU_AARCH64)
  set(_oar_emulator "${OAR_QEMU_AARCH64}" -L "${OAR_ARM64_SYSROOT}")
  if(OAR_QEMU_CPU)
    list(APPEND _oar_emulator -cpu "${OAR_QEMU_CPU}")
  endif()
  set(CMAKE_CROSSCOMPILING_EMULATOR "${_oar_emulator}" CACHE STRING "runs aarch64 programs here" FORCE)
else()
  message(WARNING "no qemu-aarch64 (Debian's qemu-user): the aarch64 programs build but cannot run here")
endif()
