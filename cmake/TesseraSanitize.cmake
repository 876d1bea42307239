# Sanitizer and fuzzing instrumentation for the whole build (docs/testing.md).
#
#   TESSERA_SANITIZE        comma-separated -fsanitize= list: "address,undefined" or "thread".
#                           Every target is compiled and linked with it; the first report aborts
#                           the process (-fno-sanitize-recover), so a test that trips one fails.
#   TESSERA_BUILD_FUZZERS   the libFuzzer targets of tests/fuzz (clang only). Everything is also
#                           compiled with -fsanitize=fuzzer-no-link, so the fuzzers see coverage
#                           of the library code they drive; the other binaries of such a build
#                           run as usual (the sanitizer runtime answers the coverage hooks).
set(TESSERA_SANITIZE "" CACHE STRING
  "Sanitizers for every target, e.g. address,undefined or thread (empty: none)")
option(TESSERA_BUILD_FUZZERS "Build the libFuzzer targets in tests/fuzz (clang)" OFF)

if(TESSERA_SANITIZE)
  add_compile_options(-fsanitize=${TESSERA_SANITIZE} -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${TESSERA_SANITIZE})
  if(TESSERA_SANITIZE MATCHES "undefined")
    # -fsanitize=function and vptr need RTTI of every type, and the plugins' C ABI calls through
    # function pointers of a plain C type: both give false reports across the dlopen boundary.
    add_compile_options(-fno-sanitize=function,vptr)
  endif()
endif()

if(TESSERA_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TESSERA_BUILD_FUZZERS needs clang (CMAKE_CXX_COMPILER=clang++): "
      "libFuzzer is part of clang's runtime (libclang-rt-14-dev)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
