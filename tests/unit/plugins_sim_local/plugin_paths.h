// Where the tests find the plugins they load: the build's plugins directory, next to the test
// binary's own directory (build/tests/tessera_unit_tests -> build/plugins/), found through
// /proc/self/exe so that no compile definition is needed.
#pragma once

#include <filesystem>
#include <string>

namespace tessera::testing {

inline std::filesystem::path BuildPluginsDir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "plugins";
}

// build/plugins/libtessera_plugin_<name>.so
inline std::string PluginPath(const std::string& name) {
  return (BuildPluginsDir() / ("libtessera_plugin_" + name + ".so")).string();
}

// The stand-in CUDA runtime built by plugins/local/CMakeLists.txt (two H100-80GB GPUs).
inline std::string FakeCudartPath() {
  return (BuildPluginsDir() / "testing" / "libtessera_fake_cudart.so").string();
}

}  // namespace tessera::testing
