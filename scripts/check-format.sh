#!/usr/bin/env bash
# Fails when a C++ file differs from what clang-format (.clang-format: Google base, 100
# columns) would write. Pass --fix to rewrite the files instead.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=(--dry-run -Werror)
if [ "${1:-}" = "--fix" ]; then mode=(-i); fi

mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h')
if [ ${#files[@]} -eq 0 ]; then exit 0; fi
clang-format "${mode[@]}" "${files[@]}"
echo "check-format: ${#files[@]} files ok"
