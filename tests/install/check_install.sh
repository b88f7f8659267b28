#!/usr/bin/env bash
# Installs this build into a fresh prefix, moves the prefix (nothing may depend
# on where it was installed), and uses it as a framework, a packager and a chip
# vendor would:
#
#  1. find_package(oar CONFIG) builds samples/list_devices, which finds the cpu
#     plugin through the installed manifests and adds two vectors on it;
#  2. pkg-config --cflags --libs oar builds and runs a program against the
#     moved prefix, and pkg-config oar-plugin-sdk builds the null plugin;
#  3. the CMake package: every target, variable and tool; dlpack/dlpack.h
#     found for consumers; the misspelt oar::oar_plugin_sdk warns and works;
#     oar_add_plugin refuses oar::oar and explains a missing find_package;
#  4. every command of plugins/null/README.md and samples/vendor_plugin/README.md
#     runs as written (run_readme.sh): a plugin copied from the template is
#     built, found and installed; the sample plugin is built out of the tree,
#     installed into a second prefix, found through OAR_PLUGIN_PATH and
#     certified by oar-conform, whose report is checked here.
#
# Usage: check_install.sh <build dir> <source dir>
set -euo pipefail
build=$1
source=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "check_install: $*"
  exit 1
}
start=$SECONDS

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
mv "$work/prefix" "$work/moved"
prefix="$work/moved"
libdir=$(dirname "$(find "$prefix" -name 'liboar.so' | head -n 1)")

unset OAR_PLUGIN_PATH OAR_PLUGINS OAR_DEVICES
# Builds of the samples reuse objects across runs when ccache is there.
if command -v ccache > /dev/null; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi

# 1. A framework.
cmake -S "$source/samples/list_devices" -B "$work/list_devices" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log"
cmake --build "$work/list_devices" > "$work/build.log"
LD_LIBRARY_PATH="$libdir" "$work/list_devices/list_devices" | tee "$work/run.log"
grep -q "^device cpu:0" "$work/run.log" || fail "the installed cpu plugin was not found"
grep -q "^add: ok" "$work/run.log" || fail "dispatch through the installed runtime failed"
plugins=$(find "$prefix" -name 'liboar_plugin_*.so' | wc -l)
manifests=$(find "$prefix" -path '*plugins.d/*.json' | wc -l)
[ "$plugins" -ge 2 ] && [ "$plugins" -eq "$manifests" ] ||
  fail "installed $plugins plugins but $manifests manifests"

# 2. pkg-config, against the moved prefix, without --define-prefix.
pc=$(find "$prefix" -name oar.pc | head -n 1)
[ -n "$pc" ] || fail "no oar.pc installed"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs oar)
echo "pkg-config --cflags --libs oar: $flags"
include=$(echo "$flags" | sed -n 's/.*-I\([^ ]*\).*/\1/p')
case "$flags" in *"-I$prefix/"*"-L$prefix/"*"-loar"*) ;; *)
  fail "pkg-config --cflags --libs oar gave '$flags', not the moved prefix $prefix" ;;
esac
[ -f "$include/oar/oar.h" ] || fail "pkg-config's include folder $include has no oar/oar.h"
# shellcheck disable=SC2046
c++ -std=c++17 "$here/probe/pkgconfig_runtime.cc" -o "$work/pkgconfig_runtime" \
  $(pkg-config --cflags --libs oar)
[ "$(LD_LIBRARY_PATH="$libdir" "$work/pkgconfig_runtime")" = OUT_OF_RANGE ] ||
  fail "a program built with pkg-config oar did not run against the moved prefix"
# shellcheck disable=SC2046
c++ -std=c++17 -shared -fPIC -fvisibility=hidden -DOAR_PLUGIN_NAME='"pcnull"' \
  "$source/plugins/null/plugin.cc" -o "$work/libpcnull.so" -Wl,--exclude-libs,ALL -Wl,-z,defs \
  $(pkg-config --cflags --libs oar-plugin-sdk)
OAR_PLUGINS="$work/libpcnull.so" "$prefix/bin/oar" list | grep -Eq '^ +pcnull +loaded' ||
  fail "a plugin built with pkg-config oar-plugin-sdk did not load"

# 3. The CMake package.
says() {  # says <log> <text>: CMake wraps messages, so compare with spaces folded
  tr -s ' \n' '  ' < "$1" | grep -qF -- "$2"
}
probe() {  # probe <mode> <log>: configures tests/install/probe in that mode
  cmake -S "$here/probe" -B "$work/probe-$1" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DPROBE="$1" -DOAR_CMAKE_DIR="$(dirname "$(find "$prefix" -name OarPlugin.cmake)")" \
    -DOAR_PROBE_EXPECT_COMM="$(if [ -e "$build/lib/liboar_comm.so" ]; then echo ON; else echo OFF; fi)" > "$2" 2>&1
}
probe package "$work/probe-package.log" || { cat "$work/probe-package.log"; fail "the CMake package is incomplete"; }
probe old_name "$work/probe-old.log" || { cat "$work/probe-old.log"; fail "oar::oar_plugin_sdk no longer works"; }
says "$work/probe-old.log" "link oar::plugin_sdk" || fail "oar::oar_plugin_sdk does not name oar::plugin_sdk"
! probe links_oar "$work/probe-links.log" || fail "oar_add_plugin accepted a plugin that links oar::oar"
says "$work/probe-links.log" "must not link oar::oar" || { cat "$work/probe-links.log"; fail "no reason given for refusing oar::oar"; }
! probe no_package "$work/probe-none.log" || fail "oar_add_plugin worked without find_package(oar)"
says "$work/probe-none.log" "call find_package(oar CONFIG REQUIRED)" ||
  { cat "$work/probe-none.log"; fail "oar_add_plugin without find_package does not say what to call"; }
unset PKG_CONFIG_PATH

# 4. The vendor's documents, command by command.
export OAR_SOURCE=$source OAR_PREFIX=$prefix
bash "$here/run_readme.sh" "$source/plugins/null/README.md" "$work/null" > "$work/null.log" 2>&1 ||
  { tail -n 40 "$work/null.log"; fail "a command of plugins/null/README.md failed"; }
bash "$here/run_readme.sh" "$source/samples/vendor_plugin/README.md" "$work/vendor" \
  > "$work/vendor.log" 2>&1 || { tail -n 60 "$work/vendor.log"; fail "a command of samples/vendor_plugin/README.md failed"; }
grep -E "^(NOT )?CERTIFIED|^PARTIAL" "$work/vendor.log" || true
report="$work/vendor/report/report.json"
[ -f "$report" ] || fail "the sample's certification wrote no $report"
cmake -DREPORT="$report" -DLOG="$work/vendor.log" -P "$here/check_sample_report.cmake" ||
  fail "the sample's report does not certify it"
echo "install: relocatable prefix, $plugins plugins with manifests, pkg-config and the CMake" \
  "package work, both READMEs run, the out-of-tree sample plugin certifies ($((SECONDS - start)) s)"
