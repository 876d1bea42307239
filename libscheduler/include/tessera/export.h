// TESSERA_EXPORT marks the symbols that libtessera exports. The library is built with hidden
// visibility, so anything not marked stays private to it.
#pragma once

#if defined(_WIN32)
#define TESSERA_EXPORT __declspec(dllexport)
#else
#define TESSERA_EXPORT [[gnu::visibility("default")]]
#endif
