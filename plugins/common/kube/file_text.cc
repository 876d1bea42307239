#include "kube/file_text.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tessera::kube {

bool ReadFileText(const std::string& path, std::string* text, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = std::strerror(errno);
    return false;
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    *error = std::strerror(errno);
    return false;
  }
  *text = contents.str();
  return true;
}

}  // namespace tessera::kube
