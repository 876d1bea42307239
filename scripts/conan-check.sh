#!/usr/bin/env bash
# Packages Tessera with its Conan recipe (conan/) and runs the recipe's test_package, offline:
# `conan create` against the system's packages, which conan/profiles/debian12 declares as
# platform requirements, in a scratch CONAN_HOME with no remotes, so nothing is downloaded and
# ~/.conan2 is left alone. The recipe and the parts of the tree it exports are copied out first,
# so the checkout gets no build folders. Exits 77 (skipped) when Conan 2 is not installed
# (scripts/install-deps.sh installs it). Set TESSERA_CONAN_KEEP=1 to keep the scratch directory.
# Usage: scripts/conan-check.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v conan >/dev/null 2>&1; then
  echo "SKIPPED: conan is not installed (scripts/install-deps.sh installs Conan 2)"
  exit 77
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/tessera-conan.XXXXXX")
if [ "${TESSERA_CONAN_KEEP:-0}" = 1 ]; then
  echo "conan-check: scratch directory $scratch"
else
  trap 'rm -rf "$scratch"' EXIT
fi
log="$scratch/conan.log"
export CONAN_HOME="$scratch/conan-home"  # even `conan --version` creates the Conan home
if ! conan --version 2>/dev/null | grep -q 'version 2\.'; then
  echo "FAILED: $(conan --version 2>&1 | head -1); the recipe needs Conan 2" >&2
  exit 1
fi

# Runs a step with its output in the log; shows the log's end when it fails.
step() {
  if ! "$@" >>"$log" 2>&1; then
    echo "FAILED: $*" >&2
    tail -n 80 "$log" >&2
    if [ "${TESSERA_CONAN_KEEP:-0}" = 1 ]; then echo "(whole log: $log)" >&2; fi
    exit 1
  fi
}

# The recipe exports ../{CMakeLists.txt,cmake,proto,sdk,libscheduler}: copy those with it.
mkdir -p "$scratch/src"
cp -r "$root/CMakeLists.txt" "$root/cmake" "$root/proto" "$root/sdk" "$root/libscheduler" \
  "$root/conan" "$scratch/src/"
rm -rf "$scratch/src/conan/test_package/build" \
  "$scratch/src/conan/test_package/CMakeUserPresets.json"

# ccache (which the CMake uses when present) hashes paths relative to here, so the package build
# hits the cache from earlier runs despite a new scratch directory each time.
export CCACHE_BASEDIR="$scratch"

start=$SECONDS
step conan profile detect --force
# No remotes: a requirement the profile does not declare fails instead of being downloaded.
for remote in $(conan remote list --format=json | python3 -c \
    'import json, sys; print(" ".join(r["name"] for r in json.load(sys.stdin)))'); do
  step conan remote remove "$remote"
done
profile="$scratch/src/conan/profiles/debian12"
step conan create "$scratch/src/conan" -pr:h "$profile" -pr:b "$profile" --build=missing

if ! grep -q '^test_package: .*: OK$' "$log"; then
  echo "FAILED: conan create passed but the test_package printed no OK line" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
grep '^test_package: ' "$log"
echo "conan-check: $(grep -o -m1 'tessera/[0-9][0-9.]*' "$log") packaged and its test_package" \
  "passed in $((SECONDS - start))s"
