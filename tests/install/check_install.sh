#!/usr/bin/env bash
# Installs this build into a fresh prefix and checks it as a framework and a
# packager would: find_package(oar CONFIG) builds samples/list_devices, which
# finds the cpu plugin through the installed manifests (relative to the
# installed liboar, so the prefix is relocatable), and pkg-config knows oar.
# Usage: check_install.sh <build dir> <source dir>
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
# Move the prefix: nothing may depend on where it was installed.
mv "$work/prefix" "$work/moved"
prefix="$work/moved"

unset OAR_PLUGIN_PATH OAR_PLUGINS OAR_DEVICES
cmake -S "$source/samples/list_devices" -B "$work/sample" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log"
cmake --build "$work/sample" > "$work/build.log"
LD_LIBRARY_PATH="$(dirname "$(find "$prefix" -name 'liboar.so' | head -n 1)")" \
  "$work/sample/list_devices" | tee "$work/run.log"
grep -q "^device cpu:0" "$work/run.log" || { echo "the installed cpu plugin was not found"; exit 1; }
grep -q "^add: ok" "$work/run.log" || { echo "dispatch through the installed runtime failed"; exit 1; }

pc=$(find "$prefix" -name oar.pc | head -n 1)
[ -n "$pc" ] || { echo "no oar.pc installed"; exit 1; }
libs=$(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --define-prefix --libs oar)
case "$libs" in *-loar*) ;; *) echo "pkg-config --libs oar gave '$libs'"; exit 1 ;; esac
plugins=$(find "$prefix" -name 'liboar_plugin_*.so' | wc -l)
manifests=$(find "$prefix" -path '*plugins.d/*.json' | wc -l)
[ "$plugins" -ge 2 ] && [ "$plugins" -eq "$manifests" ] ||
  { echo "installed $plugins plugins but $manifests manifests"; exit 1; }
echo "install: relocatable prefix works; $plugins plugins with manifests; pkg-config ok"
