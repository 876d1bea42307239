#!/usr/bin/env bash
# Fails when libtessera exports a symbol outside the tessera namespace (libscheduler/libtessera.map
# keeps Boost's and the standard library's instantiations local), or exports nothing.
set -euo pipefail
lib="$1"
exported=$(nm -DC --defined-only "$lib" | awk '$2 != "A"' | cut -d' ' -f3-)
count=$(printf '%s\n' "$exported" | grep -c . || true)
if [ "$count" -eq 0 ]; then
  echo "check_exports: $lib exports nothing" >&2
  exit 1
fi
foreign=$(printf '%s\n' "$exported" | grep -v -E '^(tessera::|(typeinfo|typeinfo name|vtable) for tessera::)' || true)
if [ -n "$foreign" ]; then
  echo "check_exports: $lib exports symbols outside the tessera namespace:" >&2
  printf '%s\n' "$foreign" >&2
  exit 1
fi
echo "check_exports: $count symbols, all in the tessera namespace"
