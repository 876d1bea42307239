#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, copies the installed plugin template
# (share/tessera/plugin-template) out of the tree, builds it with find_package(Tessera), runs its
# tests, and runs the installed tessera-plugin-conformance on the plugin it built.
# Usage: check_plugin_template.sh <build-dir> <source-dir>
set -euo pipefail
build_dir=$1
source_dir=$2  # unused: the template must build from the install alone.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Runs a step quietly; shows its output only when it fails.
step() {
  if ! "$@" >"$scratch/step.log" 2>&1; then
    echo "FAILED: $*" >&2
    cat "$scratch/step.log" >&2
    exit 1
  fi
}

prefix="$scratch/prefix"
step cmake --install "$build_dir" --prefix "$prefix"
cp -r "$prefix/share/tessera/plugin-template" "$scratch/src"

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
step cmake -S "$scratch/src" -B "$scratch/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
step cmake --build "$scratch/build"
step ctest --test-dir "$scratch/build" --output-on-failure

plugin="$scratch/build/libtessera_plugin_noop.so"
"$prefix/bin/tessera-plugin-conformance" "$plugin"
"$prefix/bin/tessera-plugin-conformance" "$plugin" --config "$scratch/src/example.conf" \
  --executor-node noop-1

# Renaming is one variable: the library, the descriptor's name, the targets and the tests follow.
step cmake -S "$scratch/src" -B "$scratch/renamed" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DPLUGIN_NAME=renamed-backend "${launcher[@]}"
step cmake --build "$scratch/renamed"
step ctest --test-dir "$scratch/renamed" --output-on-failure
renamed="$scratch/renamed/libtessera_plugin_renamed-backend.so"
report=$("$prefix/bin/tessera-plugin-conformance" "$renamed" --executor-node renamed-backend-0)
if ! grep -q '^PASS handshake: renamed-backend 1.0.0' <<<"$report"; then
  echo "FAILED: the renamed plugin's descriptor does not say renamed-backend:" >&2
  echo "$report" >&2
  exit 1
fi
