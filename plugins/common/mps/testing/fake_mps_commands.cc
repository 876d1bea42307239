#include "mps/testing/fake_mps_commands.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tessera::fake_mps {
namespace {

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::string Percent(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f\n", value);
  return text;
}

// A percentage in (0, 100], as a number (the real tool takes "25" and "25.0").
bool ParsePercent(const std::string& text, double* value) {
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && *value > 0.0 && *value <= 100.0;
}

// "<digits>G" or "<digits>M", as the reference describes the value.
bool ValidMemoryValue(const std::string& text) {
  if (text.size() < 2) return false;
  const char unit = text.back();
  if (unit != 'G' && unit != 'M') return false;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  return true;
}

std::string Usage(const std::string& command, const std::string& arguments) {
  return "Usage: " + command + (arguments.empty() ? "" : " " + arguments) + "\n";
}

}  // namespace

DaemonState::DaemonState(pid_t pid, std::vector<std::string> devices, std::string refused)
    : pid_(pid),
      devices_(std::move(devices)),
      refused_(std::move(refused)),
      next_server_pid_(pid + 1) {}

std::string DaemonState::Device(const std::string& name) const {
  char* end = nullptr;
  const long ordinal = std::strtol(name.c_str(), &end, 10);
  if (!name.empty() && end == name.c_str() + name.size()) {
    return ordinal >= 0 && ordinal < static_cast<long>(devices_.size()) ? std::to_string(ordinal)
                                                                        : "";
  }
  if (name.rfind("GPU-", 0) != 0) return "";
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].rfind(name, 0) == 0 || name.rfind(devices_[i], 0) == 0) {
      return std::to_string(i);
    }
  }
  return "";
}

Server* DaemonState::FindServer(const std::string& pid_text) {
  for (Server& server : servers_) {
    if (std::to_string(server.pid) == pid_text) return &server;
  }
  return nullptr;
}

std::string DaemonState::Execute(const std::string& line, bool* quit) {
  *quit = false;
  commands_.push_back(line);
  const std::vector<std::string> w = Words(line);
  if (w.empty()) return "";
  const std::string& command = w[0];
  const size_t args = w.size() - 1;
  if (!refused_.empty() && command == refused_) return "Refused: " + line + "\n";

  if (command == "quit") {
    *quit = true;
    return "";
  }
  if (command == "get_server_list") {
    std::string answer;
    for (const Server& server : servers_) answer += std::to_string(server.pid) + "\n";
    return answer;
  }
  if (command == "start_server") {
    if (args != 2 || w[1] != "-uid") return Usage(command, "-uid <user id>");
    char* end = nullptr;
    const long uid = std::strtol(w[2].c_str(), &end, 10);
    if (end != w[2].c_str() + w[2].size() || uid < 0) return "Invalid user id: " + w[2] + "\n";
    for (const Server& server : servers_) {
      if (server.uid == uid) return "A server for user " + w[2] + " already exists\n";
    }
    Server server;
    server.pid = next_server_pid_++;
    server.uid = uid;
    server.active_thread_pct = default_active_thread_pct_;
    server.pinned_mem_limit = default_pinned_mem_limit_;
    servers_.push_back(server);
    return "";
  }
  if (command == "get_server_status" || command == "get_client_list" ||
      command == "get_active_thread_percentage" || command == "shutdown_server") {
    const bool force = command == "shutdown_server" && args == 2 && w[2] == "-f";
    if (args != 1 && !force) return Usage(command, "<PID>");
    Server* server = FindServer(w[1]);
    if (server == nullptr) return "Server " + w[1] + " not found\n";
    if (command == "get_server_status") return "ACTIVE\n";
    if (command == "get_client_list") return "";
    if (command == "get_active_thread_percentage") return Percent(server->active_thread_pct);
    servers_.erase(servers_.begin() + (server - servers_.data()));
    return "";
  }
  if (command == "set_default_active_thread_percentage") {
    if (args != 1) return Usage(command, "<percentage>");
    double value = 0;
    if (!ParsePercent(w[1], &value)) return "Invalid percentage: " + w[1] + "\n";
    default_active_thread_pct_ = value;
    return Percent(value);
  }
  if (command == "get_default_active_thread_percentage") {
    if (args != 0) return Usage(command, "");
    return Percent(default_active_thread_pct_);
  }
  if (command == "set_active_thread_percentage") {
    if (args != 2) return Usage(command, "<PID> <percentage>");
    Server* server = FindServer(w[1]);
    if (server == nullptr) return "Server " + w[1] + " not found\n";
    double value = 0;
    if (!ParsePercent(w[2], &value)) return "Invalid percentage: " + w[2] + "\n";
    server->active_thread_pct = value;
    return Percent(value);
  }
  if (command == "set_default_device_pinned_mem_limit" ||
      command == "get_default_device_pinned_mem_limit") {
    const bool set = command[0] == 's';
    if (args != (set ? 2u : 1u)) return Usage(command, set ? "<dev> <value>" : "<dev>");
    const std::string device = Device(w[1]);
    if (device.empty()) return "Invalid device: " + w[1] + "\n";
    if (!set) {
      auto it = default_pinned_mem_limit_.find(device);
      return (it == default_pinned_mem_limit_.end() ? "0" : it->second) + "\n";
    }
    if (!ValidMemoryValue(w[2])) return "Invalid memory limit value: " + w[2] + "\n";
    default_pinned_mem_limit_[device] = w[2];
    return "";
  }
  if (command == "set_device_pinned_mem_limit" || command == "get_device_pinned_mem_limit") {
    const bool set = command[0] == 's';
    if (args != (set ? 3u : 2u)) {
      return Usage(command, set ? "<PID> <dev> <value>" : "<PID> <dev>");
    }
    Server* server = FindServer(w[1]);
    if (server == nullptr) return "Server " + w[1] + " not found\n";
    const std::string device = Device(w[2]);
    if (device.empty()) return "Invalid device: " + w[2] + "\n";
    if (!set) {
      auto it = server->pinned_mem_limit.find(device);
      return (it == server->pinned_mem_limit.end() ? "0" : it->second) + "\n";
    }
    if (!ValidMemoryValue(w[3])) return "Invalid memory limit value: " + w[3] + "\n";
    server->pinned_mem_limit[device] = w[3];
    return "";
  }
  return "Unknown command: " + line + "\n";
}

std::string DaemonState::ToJson(bool running) const {
  nlohmann::json doc;
  doc["pid"] = pid_;
  doc["running"] = running;
  doc["visible_devices"] = devices_;
  doc["default_active_thread_percentage"] = default_active_thread_pct_;
  doc["default_device_pinned_mem_limit"] = default_pinned_mem_limit_;
  doc["servers"] = nlohmann::json::array();
  for (const Server& server : servers_) {
    doc["servers"].push_back({{"pid", server.pid},
                              {"uid", server.uid},
                              {"active_thread_percentage", server.active_thread_pct},
                              {"device_pinned_mem_limit", server.pinned_mem_limit}});
  }
  doc["commands"] = commands_;
  return doc.dump(2) + "\n";
}

}  // namespace tessera::fake_mps
