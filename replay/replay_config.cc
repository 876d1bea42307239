// Implementation of the replay's configuration (replay_config.h).
#include "replay_config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include "openb_pod_csv.h"
#include "tessera/daemon_config.h"
#include "tessera/message_file.h"
#include "trace_input.h"

namespace tessera::replay {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string FieldList(const Descriptor* d) {
  std::string list;
  for (int i = 0; i < d->field_count(); ++i) list += (i ? ", " : "") + d->field(i)->name();
  return list;
}

// Splits "a.b[x.y].c" on the dots outside brackets.
std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  std::string part;
  int depth = 0;
  for (char c : path) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == '.' && depth == 0) {
      parts.push_back(part);
      part.clear();
    } else {
      part.push_back(c);
    }
  }
  parts.push_back(part);
  return parts;
}

StatusOr<bool> ParseBool(const std::string& v) {
  std::string lower = v;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "0" || lower == "no" || lower == "off") return false;
  return InvalidArgumentError("not a boolean '" + v + "' (true or false)");
}

Status SetScalar(Message* m, const FieldDescriptor* f, const std::string& value) {
  const Reflection* r = m->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL: {
      TESSERA_ASSIGN_OR_RETURN(bool b, ParseBool(value));
      r->SetBool(m, f, b);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: {
      TESSERA_ASSIGN_OR_RETURN(int64_t n, ParseInteger(value, "value"));
      const bool is_unsigned = f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32 ||
                               f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64;
      if (is_unsigned && n < 0) return InvalidArgumentError("must be >= 0, got " + value);
      const bool is32 = f->cpp_type() == FieldDescriptor::CPPTYPE_INT32 ||
                        f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32;
      if (is32 && (n > INT32_MAX || n < INT32_MIN)) {
        return InvalidArgumentError("out of range for a 32-bit field: " + value);
      }
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT32)
        r->SetInt32(m, f, static_cast<int32_t>(n));
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) r->SetInt64(m, f, n);
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32)
        r->SetUInt32(m, f, static_cast<uint32_t>(n));
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64)
        r->SetUInt64(m, f, static_cast<uint64_t>(n));
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      TESSERA_ASSIGN_OR_RETURN(double d, ParseNumber(value, "value"));
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
        r->SetDouble(m, f, d);
      } else {
        r->SetFloat(m, f, static_cast<float>(d));
      }
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_STRING:
      r->SetString(m, f, value);
      return Status::Ok();
    case FieldDescriptor::CPPTYPE_ENUM: {
      std::string name = value;
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
        return c == '-' ? '_' : static_cast<char>(std::toupper(c));
      });
      const EnumValueDescriptor* e = f->enum_type()->FindValueByName(name);
      // "best-fit" for BEST_FIT, and the STORE_CHECK_ prefix of enums that carry one optional.
      if (!e) {
        for (int i = 0; i < f->enum_type()->value_count() && !e; ++i) {
          const std::string& full = f->enum_type()->value(i)->name();
          if (full.size() > name.size() &&
              full.compare(full.size() - name.size(), name.size(), name) == 0 &&
              full[full.size() - name.size() - 1] == '_') {
            e = f->enum_type()->value(i);
          }
        }
      }
      if (!e) {
        std::string list;
        for (int i = 0; i < f->enum_type()->value_count(); ++i) {
          list += (i ? ", " : "") + f->enum_type()->value(i)->name();
        }
        return InvalidArgumentError("'" + value + "' is not one of " + list);
      }
      r->SetEnum(m, f, e);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return InvalidArgumentError("is a section, not a value; set one of its fields (" +
                              FieldList(f->message_type()) + ")");
}

}  // namespace

Status ApplySetting(const std::string& key_value, v1::DaemonConfig* config) {
  const size_t eq = key_value.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgumentError("--set '" + key_value + "': expected key=value");
  }
  const std::string key = key_value.substr(0, eq);
  const std::string value = key_value.substr(eq + 1);
  auto fail = [&](const std::string& problem) {
    return InvalidArgumentError("--set " + key + ": " + problem);
  };
  Message* m = config;
  const std::vector<std::string> parts = SplitPath(key);
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string name = parts[i];
    std::string selector;
    bool has_selector = false;
    if (const size_t open = name.find('['); open != std::string::npos) {
      if (name.back() != ']') return fail("'" + name + "' has an unclosed '['");
      selector = name.substr(open + 1, name.size() - open - 2);
      name = name.substr(0, open);
      has_selector = true;
    }
    const Descriptor* d = m->GetDescriptor();
    const FieldDescriptor* f = d->FindFieldByName(name);
    if (!f) {
      return fail("unknown field '" + name + "' in " + (i == 0 ? "the config" : parts[i - 1]) +
                  " (fields: " + FieldList(d) + ")");
    }
    const bool last = i + 1 == parts.size();
    if (f->is_repeated()) {
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || !has_selector) {
        return fail("'" + name + "' is a list; pick an entry by name, " + name +
                    "[<name>].<field>, or set the list in the config file");
      }
      const FieldDescriptor* name_field = f->message_type()->FindFieldByName("name");
      if (!name_field) return fail("the entries of '" + name + "' have no name to pick by");
      const Reflection* r = m->GetReflection();
      Message* found = nullptr;
      std::string names;
      for (int k = 0; k < r->FieldSize(*m, f); ++k) {
        Message* entry = r->MutableRepeatedMessage(m, f, k);
        const std::string entry_name = entry->GetReflection()->GetString(*entry, name_field);
        names += (k ? ", " : "") + entry_name;
        if (entry_name == selector) found = entry;
      }
      if (!found) {
        return fail("no entry named '" + selector + "' in " + name +
                    (names.empty() ? " (it is empty)" : " (entries: " + names + ")"));
      }
      if (last) return fail("pick a field of " + name + "[" + selector + "]");
      m = found;
      continue;
    }
    if (has_selector) return fail("'" + name + "' is not a list");
    if (last) {
      if (Status s = SetScalar(m, f, value); !s.ok()) return fail(s.message());
      return Status::Ok();
    }
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      return fail("'" + name + "' is a value, not a section");
    }
    m = m->GetReflection()->MutableMessage(m, f);
  }
  return fail("empty key");
}

namespace {

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

// A YAML scalar as written on one line: a trailing " # comment" dropped, quotes taken off.
std::string ScalarOf(const std::string& raw) {
  std::string v = Trim(raw);
  if (!v.empty() && (v[0] == '"' || v[0] == '\'')) {
    const size_t close = v.find(v[0], 1);
    return close == std::string::npos ? v : v.substr(1, close - 1);
  }
  const size_t comment = v.find(" #");
  return Trim(comment == std::string::npos ? v : v.substr(0, comment));
}

// The config file as tesserad reads it, plus what its replay: section says.
StatusOr<ReplaySection> ReadConfigFile(const std::string& path, v1::DaemonConfig* config) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  TESSERA_ASSIGN_OR_RETURN(ReplaySection section, SplitReplaySection(text.str(), path));
  TESSERA_RETURN_IF_ERROR(ParseYamlMessage(section.daemon_yaml, path, config));
  ApplyDaemonConfigDefaults(config);
  TESSERA_RETURN_IF_ERROR(ValidateDaemonConfig(*config));
  return section;
}

}  // namespace

StatusOr<ReplaySection> SplitReplaySection(const std::string& yaml, const std::string& source) {
  ReplaySection out;
  std::istringstream in(yaml);
  std::string line;
  int number = 0;
  bool inside = false;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = source + ":" + std::to_string(number) + ": ";
    const std::string trimmed = Trim(line);
    const bool indented = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    if (line.compare(0, 7, "replay:") == 0) {
      const std::string rest = ScalarOf(line.substr(7));
      if (!rest.empty() && rest[0] != '#') {
        return InvalidArgumentError(where +
                                    "replay: write the section as a block, its keys "
                                    "indented on the lines below 'replay:'");
      }
      inside = true;
      line.clear();
    } else if (inside && (trimmed.empty() || trimmed[0] == '#')) {
      line.clear();
    } else if (inside && indented) {
      const size_t colon = trimmed.find(':');
      const std::string key = Trim(trimmed.substr(0, colon));
      if (key != "one_queue") {
        return InvalidArgumentError(where + "replay." + key +
                                    ": unknown field (known fields: one_queue)");
      }
      out.one_queue = colon == std::string::npos ? "" : ScalarOf(trimmed.substr(colon + 1));
      if (out.one_queue.empty()) {
        return InvalidArgumentError(where + "replay.one_queue: must name a queue");
      }
      line.clear();
    } else {
      inside = false;
    }
    out.daemon_yaml += line + "\n";
  }
  return out;
}

StatusOr<ReplayConfig> LoadReplayConfig(const ReplayConfigRequest& request) {
  ReplayConfig out;
  if (request.config_path.empty()) {
    TESSERA_ASSIGN_OR_RETURN(out.daemon, LoadDaemonConfig(""));
  } else {
    TESSERA_ASSIGN_OR_RETURN(ReplaySection section,
                             ReadConfigFile(request.config_path, &out.daemon));
    out.one_queue = section.one_queue;
  }
  v1::DaemonConfig& c = out.daemon;
  if (!request.cluster_path.empty()) {
    c.clear_simulated_cluster();
    c.clear_simulated_cluster_file();
    c.clear_executor_plugin();
    c.clear_backends();
    const std::string& path = request.cluster_path;
    if (path.size() > 4 && path.compare(path.size() - 4, 4, ".csv") == 0) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<OpenbNode> nodes, ReadOpenbNodes(path));
      *c.mutable_simulated_cluster() = OpenbCluster(nodes);
    } else {
      c.set_simulated_cluster_file(path);
    }
  } else if (c.has_executor_plugin()) {
    return InvalidArgumentError(
        "the config runs executor_plugin '" + c.executor_plugin().plugin() +
        "'; a replay runs the built-in simulated executor: give its cluster with --cluster");
  } else if (c.backends_size() > 0) {
    return InvalidArgumentError(
        "the config runs backends (the first: '" + c.backends(0).plugin() +
        "'); a replay runs the built-in simulated executor: give its cluster with --cluster");
  }
  if (request.cluster_scale != 1) {
    if (!(request.cluster_scale > 0)) return InvalidArgumentError("--cluster-scale: must be > 0");
    if (!c.simulated_cluster_file().empty()) {
      TESSERA_RETURN_IF_ERROR(
          ReadMessageFile(c.simulated_cluster_file(), c.mutable_simulated_cluster()));
      c.clear_simulated_cluster_file();
    }
    for (v1::SimulatedNodeGroup& group : *c.mutable_simulated_cluster()->mutable_groups()) {
      group.set_count(std::max<int32_t>(
          1, static_cast<int32_t>(std::lround(group.count() * request.cluster_scale))));
    }
  }
  for (const std::string& set : request.sets) TESSERA_RETURN_IF_ERROR(ApplySetting(set, &c));
  TESSERA_RETURN_IF_ERROR(ValidateDaemonConfig(c));
  TESSERA_ASSIGN_OR_RETURN(out.options, ToOptions(c));
  // In memory: nothing outlives the run, and virtual time makes commit latency irrelevant.
  out.options.store.path.clear();
  out.options.store.durable = false;
  return out;
}

}  // namespace tessera::replay
