#include "tenant_view.h"

#include <cctype>
#include <string_view>

namespace tesserad {

std::string WithoutOtherJobIds(const std::string& reason, tessera::JobId own) {
  static constexpr std::string_view kJob = "job ";
  const std::string own_id = std::to_string(own);
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t found = reason.find(kJob, at);
    if (found == std::string::npos) break;
    const size_t id_start = found + kJob.size();
    size_t id_end = id_start;
    while (id_end < reason.size() && std::isdigit(static_cast<unsigned char>(reason[id_end]))) {
      ++id_end;
    }
    const std::string_view id(reason.data() + id_start, id_end - id_start);
    out.append(reason, at, found - at);
    if (!id.empty() && id != own_id) {
      out += "another job";
    } else {
      out.append(reason, found, id_end - found);
    }
    at = id_end;
  }
  out.append(reason, at, std::string::npos);
  return out;
}

}  // namespace tesserad
