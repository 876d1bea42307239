#!/usr/bin/env bash
# Installs the build tree into a scratch prefix that is not on the loader path (like the README's
# /opt/tessera), builds tests/consumer against it with find_package(Tessera), checks that the
# SDK's GPU tables answer from the prefix (sdk_tables), and runs the consumer twice: on the
# built-in simulation, and through the installed sim plugin isolated in the installed
# tessera-plugin-host. No LD_LIBRARY_PATH: the installed binaries and plugins find their
# libraries through their RUNPATH alone. Then it builds the worked examples of docs/embedding.md
# (each ```cpp block after an "<!-- example: NAME.cc -->" line) and runs them: the portal on a
# store in the scratch directory, the virtual-time simulation, and the linked executor. Last, the
# installed tesserad answers the installed tessctl, on its simulation and then on the installed
# sim plugin named without plugin_dirs (found in the default, <libdir>/tessera/plugins of the
# prefix).
# Usage: check.sh <build-dir> <source-dir>
set -euo pipefail
build_dir=$1
source_dir=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
prefix="$scratch/opt/tessera"

examples="$scratch/examples"
mkdir -p "$examples"
for name in portal simulate linked; do
  awk -v marker="<!-- example: $name.cc -->" '
    $0 == marker { found = 1; next }
    found == 1 && /^```cpp$/ { found = 2; next }
    found == 2 && /^```$/ { exit }
    found == 2 { print }
  ' "$source_dir/docs/embedding.md" >"$examples/$name.cc"
  if [ ! -s "$examples/$name.cc" ]; then
    echo "docs/embedding.md has no block after <!-- example: $name.cc -->" >&2
    exit 1
  fi
done

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
cmake -S "$source_dir/tests/consumer" -B "$scratch/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DTESSERA_DOC_EXAMPLES_DIR="$examples" >/dev/null
cmake --build "$scratch/build" >/dev/null
unset LD_LIBRARY_PATH
"$scratch/build/sdk_tables"
"$scratch/build/consumer"
plugin=$(find "$prefix" -name libtessera_plugin_sim.so | head -n 1)
"$scratch/build/consumer" "$plugin"
"$scratch/build/portal" "$scratch/portal.db"
"$scratch/build/simulate"
"$scratch/build/linked" "$scratch/linked.db"

# The installed daemon and CLI run from the prefix too: tesserad on its embedded defaults (a
# simulated cluster) answers the installed tessctl.
cat >"$scratch/tesserad.yaml" <<YAML
server:
  listen: 127.0.0.1:0
store:
  path: $scratch/daemon/state.db
YAML
"$prefix/bin/tesserad" --config "$scratch/tesserad.yaml" >"$scratch/tesserad.log" 2>&1 &
daemon=$!
trap 'kill "$daemon" 2>/dev/null || true; rm -rf "$scratch"' EXIT
url=""
for _ in $(seq 100); do
  url=$(grep -o 'listening on http://[0-9.:]*' "$scratch/tesserad.log" | head -n 1 | cut -d' ' -f3 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "installed tesserad did not start:" >&2
  cat "$scratch/tesserad.log" >&2
  exit 1
fi
"$prefix/bin/tessctl" --server "$url" submit --gpus 1 >/dev/null
"$prefix/bin/tessctl" --server "$url" nodes | grep -q Ready
kill "$daemon"
wait "$daemon" || true
echo "installed tesserad and tessctl: ok"

cat >"$scratch/tesserad-plugin.yaml" <<YAML
server:
  listen: 127.0.0.1:0
store:
  path: $scratch/daemon-plugin/state.db
executor_plugin:
  plugin: sim
YAML
"$prefix/bin/tesserad" --config "$scratch/tesserad-plugin.yaml" >"$scratch/tesserad-plugin.log" 2>&1 &
daemon=$!
url=""
for _ in $(seq 100); do
  url=$(grep -o 'listening on http://[0-9.:]*' "$scratch/tesserad-plugin.log" | head -n 1 | cut -d' ' -f3 || true)
  [ -n "$url" ] && break
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "installed tesserad did not start with executor_plugin: {plugin: sim} and no plugin_dirs:" >&2
  cat "$scratch/tesserad-plugin.log" >&2
  exit 1
fi
"$prefix/bin/tessctl" --server "$url" nodes | grep -q Ready
kill "$daemon"
wait "$daemon" || true
echo "installed tesserad finds the installed sim plugin by name: ok"
