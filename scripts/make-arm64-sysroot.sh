#!/usr/bin/env bash
# Makes the aarch64 sysroot that cmake/toolchains/aarch64-linux-gnu.cmake
# builds against and qemu-aarch64 runs in: Debian 12's arm64 packages of the
# libraries OAR's core, cpu plugin, oar, oar-conform and unit tests need, with
# their dependencies (libc6, libstdc++, OpenBLAS, ...), unpacked into one folder.
#
# How: apt-get itself, pointed at a private state and cache folder with
# APT::Architecture=arm64, resolves the dependencies and downloads the .debs
# (the host's sources and keyrings, so the same mirror and signatures as every
# other package here); dpkg-deb -x unpacks them. Nothing touches the host's
# dpkg database or apt lists (no `dpkg --add-architecture`), nothing needs
# root, and no maintainer script runs (none is needed for headers and
# libraries: the one thing they would do, Debian's BLAS alternatives, is done
# below by hand). mmdebstrap would do the same with more machinery (a chroot
# in unshare or root mode, qemu for arm64 maintainer scripts); plain apt-get is
# on every Debian machine.
#
# Idempotent and cached: the sysroot goes to ${OAR_ARM64_SYSROOT:-~/.cache/oar/sysroot-arm64}
# and is rebuilt only when the package list below (this script) changes; the
# downloaded .debs stay in <sysroot>.debs for the next time.
# Usage: scripts/make-arm64-sysroot.sh [--force]; prints the sysroot's path last.
set -euo pipefail

sysroot="${OAR_ARM64_SYSROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/oar/sysroot-arm64}"
work="${sysroot}.apt"   # apt's private state, lists and configuration
debs="${sysroot}.debs"  # the downloaded packages

# What the cross build links or includes (CMakeLists.txt, plugins/cpu,
# conformance/harness, tests); apt adds their dependencies.
packages=(
  libc6-dev libstdc++-12-dev libgcc-12-dev   # C and C++ runtime, libgomp (OpenMP)
  libopenblas-dev                            # the cpu plugin's BLAS (OpenBLAS, pthreads)
  libboost-dev nlohmann-json3-dev libcli11-dev libfmt-dev libdlpack-dev  # the core
  libssl-dev libarchive-dev                  # oar-conform's signed bundles
  libgtest-dev libgmock-dev                  # the unit tests
)

stamp="$sysroot/.oar-sysroot"
want="$(printf '%s\n' "${packages[@]}" | sha256sum | cut -c1-16)"
if [ "${1:-}" != "--force" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "make-arm64-sysroot: up to date" >&2
  echo "$sysroot"
  exit 0
fi

mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/etc" "$debs"
: >"$work/status"
apt_opts=(
  -o "APT::Architecture=arm64" -o "APT::Architectures::=arm64"
  -o "Dir::State=$work" -o "Dir::State::Lists=$work/lists" -o "Dir::State::status=$work/status"
  -o "Dir::Cache=$work" -o "Dir::Cache::archives=$debs"
  -o "Dir::Etc::Preferences=$work/etc/preferences" -o "Dir::Etc::PreferencesParts=$work/etc"
  -o "APT::Install-Recommends=false" -o "APT::Get::Download-Only=true"
  -o "Debug::NoLocking=true" -o "APT::Sandbox::User=root"
)
echo "make-arm64-sysroot: arm64 package lists (private, in $work)" >&2
apt-get "${apt_opts[@]}" -qq update
# An empty status file: apt resolves the whole closure as for a new system.
# The simulation names exactly the packages and versions of this resolution
# (the cache may hold older versions too).
mapfile -t resolved < <(apt-get "${apt_opts[@]}" -qq -s install "${packages[@]}" |
  sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1_\2/p')
[ "${#resolved[@]}" -gt 0 ] || { echo "make-arm64-sysroot: apt resolved no package" >&2; exit 1; }
echo "make-arm64-sysroot: downloading ${#resolved[@]} packages (${packages[*]} and their dependencies)" >&2
apt-get "${apt_opts[@]}" -qq -y install "${packages[@]}" >/dev/null
files=()
for r in "${resolved[@]}"; do
  f=("$debs/${r//:/%3a}"_*.deb)  # name_version_arch.deb, the epoch's colon escaped
  [ -f "${f[0]}" ] || { echo "make-arm64-sysroot: $r was not downloaded" >&2; exit 1; }
  files+=("${f[0]}")
done

# Unpack into a fresh folder, then swap it in.
rm -rf "$sysroot.new"
mkdir -p "$sysroot.new"
for f in "${files[@]}"; do
  dpkg-deb -x "$f" "$sysroot.new"
done
cd "$sysroot.new"
# Debian's usrmerge: /lib and /lib64 are /usr/lib (the loader's path,
# /lib/ld-linux-aarch64.so.1, must resolve for qemu-aarch64 -L).
for d in lib lib64 bin sbin; do
  if [ ! -e "$d" ] && [ -d "usr/$d" ]; then ln -s "usr/$d" "$d"; fi
done
# Absolute symlinks point into the host: make them relative to the sysroot.
find . -type l -lname '/*' -print0 | while IFS= read -r -d '' link; do
  target="$(readlink "$link")"
  dir="$(dirname "$link")"
  ln -sfn "$(realpath -m --relative-to="$dir" ".$target")" "$link"
done
# What the OpenBLAS packages' maintainer scripts would register with
# update-alternatives: the generic BLAS, LAPACK and OpenBLAS names, pointing
# at the pthreads build.
multiarch=usr/lib/aarch64-linux-gnu
for lib in "$multiarch"/openblas-pthread/lib*.so*; do
  ln -sfn "openblas-pthread/$(basename "$lib")" "$multiarch/$(basename "$lib")"
done
for h in usr/include/aarch64-linux-gnu/openblas-pthread/*.h; do
  ln -sfn "openblas-pthread/$(basename "$h")" "usr/include/aarch64-linux-gnu/$(basename "$h")"
done
cd - >/dev/null
echo "$want" >"$sysroot.new/.oar-sysroot"
rm -rf "$sysroot.old"
if [ -e "$sysroot" ]; then mv "$sysroot" "$sysroot.old"; fi
mv "$sysroot.new" "$sysroot"
rm -rf "$sysroot.old"
echo "make-arm64-sysroot: ${#files[@]} packages in $sysroot ($(du -sh "$sysroot" | cut -f1))" >&2
echo "$sysroot"
