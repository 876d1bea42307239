#!/usr/bin/env bash
# Installs what is missing, builds everything (library, tests, benchmarks, examples) and runs
# the whole test suite, then the format check. This is the README's test command and what
# .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset default
cmake --build --preset default
ctest --preset default
scripts/check-format.sh
