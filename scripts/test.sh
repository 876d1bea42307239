#!/usr/bin/env bash
# Installs what is missing, builds everything (library, tests, benchmarks, examples) and runs
# the whole test suite, then the sanitizer and fuzzing stages and the format check. This is the
# README's test command and what .ci/run calls. Each stage prints its time (docs/testing.md).
#
#   TESSERA_CI_SANITIZERS   which sanitizer stages run:
#     fuzz (default)  clang ASan+UBSan build of the library and the fuzz targets: the corpora
#                     replayed (ctest --preset fuzz), then each fuzzer for a bounded time
#     full            also the unit, integration, daemon and CLI tests under ASan+UBSan and the
#                     threaded tests (label threads) under TSan; costs two more builds
#     0               none
#   TESSERA_FUZZ_SECONDS    time per fuzz target (default 30; scripts/fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

# The compiler cache is shared by every checkout of the machine: paths are hashed relative to
# the checkout, so a clone in any folder hits what another one compiled.
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=1

stage() {
  local name="$1"
  shift
  local start=$SECONDS
  echo "=== stage $name"
  "$@"
  echo "=== stage $name: $((SECONDS - start)) s"
}

sanitizers="${TESSERA_CI_SANITIZERS:-fuzz}"
case "$sanitizers" in 0 | fuzz | full) ;; *)
  echo "TESSERA_CI_SANITIZERS must be 0, fuzz or full, not '$sanitizers'" >&2
  exit 2
  ;;
esac

stage deps scripts/install-deps.sh
stage default-build bash -c 'cmake --preset default && cmake --build --preset default'
stage default-test ctest --preset default
if [ "$sanitizers" = fuzz ]; then
  stage fuzz-build bash -c 'cmake --preset asan && cmake --build --preset fuzz'
  stage fuzz-corpora ctest --preset fuzz
  stage fuzz scripts/fuzz.sh build-asan
elif [ "$sanitizers" = full ]; then
  stage asan-build bash -c 'cmake --preset asan && cmake --build --preset asan'
  stage asan-test ctest --preset asan
  stage fuzz scripts/fuzz.sh build-asan
  stage tsan-build bash -c 'cmake --preset tsan && cmake --build --preset tsan'
  stage tsan-test ctest --preset tsan
fi
stage format scripts/check-format.sh
