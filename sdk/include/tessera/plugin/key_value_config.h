// KeyValueConfig: a plugin configuration of "key = value" lines, parsed once with the errors an
// operator can act on, so that a plugin's Init is its keys and their defaults, not a parser.
//
//   # '#' starts a comment; blank lines are ignored; spaces and tabs around keys and values are
//   # trimmed. Each key at most once.
//   node_prefix = gpu
//   nodes = 4
//
// Parse refuses a line without '=', a key not in the plugin's list and a key given twice;
// the typed getters refuse a value out of range. Every error is INVALID_ARGUMENT naming the line
// or the key and the value:
//
//   config line 3: unknown key 'nodez' (known: node_prefix, nodes)
//   nodes: must be an integer from 1 to 1000, got 'lots' (config line 2)
//
// Use:
//
//   using tessera::plugin::KeyValueConfig;
//   KeyValueConfig kv;
//   PluginStatus status = KeyValueConfig::Parse(text, {"node_prefix", "nodes"}, &kv);
//   if (status.ok()) status = kv.String("node_prefix", &config.node_prefix);
//   if (status.ok()) status = kv.Integer("nodes", 1, 1000, &config.nodes);
//   if (!status.ok()) return status;
//
// A key left out leaves its variable alone, so defaults are the variables' initial values.
// Header-only; a parsed config is an immutable value, safe to read from any thread.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/plugin/plugin.h"

namespace tessera::plugin {

class KeyValueConfig {
 public:
  // Parses `text` into *out. Every key must be one of `known`. Errors: INVALID_ARGUMENT,
  // "config line <n>: <why>".
  static PluginStatus Parse(std::string_view text, const std::vector<std::string>& known,
                            KeyValueConfig* out) {
    KeyValueConfig parsed;
    int number = 0;
    while (!text.empty()) {
      ++number;
      const size_t end = text.find('\n');
      std::string_view line = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
      if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
        line = line.substr(0, hash);
      }
      line = Trim(line);
      if (line.empty()) continue;
      const std::string at = "config line " + std::to_string(number) + ": ";
      const size_t equals = line.find('=');
      if (equals == std::string_view::npos) {
        return Invalid(at + "expected key = value, got '" + std::string(line) + "'");
      }
      const std::string key(Trim(line.substr(0, equals)));
      if (key.empty()) return Invalid(at + "no key before '='");
      bool is_known = false;
      std::string list;
      for (const std::string& k : known) {
        is_known |= k == key;
        list += (list.empty() ? "" : ", ") + k;
      }
      if (!is_known) return Invalid(at + "unknown key '" + key + "' (known: " + list + ")");
      const auto [previous, added] =
          parsed.values_.emplace(key, Value{std::string(Trim(line.substr(equals + 1))), number});
      if (!added) {
        return Invalid(at + "'" + key + "' is given again (first on line " +
                       std::to_string(previous->second.line) + ")");
      }
    }
    *out = std::move(parsed);
    return PluginStatus::Ok();
  }

  bool Has(std::string_view key) const { return values_.find(key) != values_.end(); }

  // The value of `key` into *out when it was given. Errors: INVALID_ARGUMENT when it is empty
  // and `allow_empty` is false.
  PluginStatus String(std::string_view key, std::string* out, bool allow_empty = false) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return PluginStatus::Ok();
    if (it->second.text.empty() && !allow_empty) {
      return Invalid(std::string(key) + ": must not be empty" + Where(it->second));
    }
    *out = it->second.text;
    return PluginStatus::Ok();
  }

  // The value of `key`, a decimal integer in [min, max], into *out when it was given. Errors:
  // INVALID_ARGUMENT for anything else ("nodes: must be an integer from 1 to 1000, got 'x'").
  template <typename Int>
  PluginStatus Integer(std::string_view key, Int min, Int max, Int* out) const {
    static_assert(std::is_integral_v<Int>);
    const auto it = values_.find(key);
    if (it == values_.end()) return PluginStatus::Ok();
    const std::string& text = it->second.text;
    Int value = 0;
    if (!ParseDecimal(text, min, max, &value)) {
      return Invalid(std::string(key) + ": must be " + RangeText<Int>(min, max) + ", got '" + text +
                     "'" + Where(it->second));
    }
    *out = value;
    return PluginStatus::Ok();
  }

 private:
  struct Value {
    std::string text;
    int line = 0;
  };

  static PluginStatus Invalid(std::string message) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, std::move(message));
  }
  static std::string Where(const Value& value) {
    return " (config line " + std::to_string(value.line) + ")";
  }
  static std::string_view Trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
      text.remove_suffix(1);
    }
    return text;
  }

  // An optional '-' and digits, within [min, max], without overflow.
  template <typename Int>
  static bool ParseDecimal(const std::string& text, Int min, Int max, Int* out) {
    size_t i = 0;
    const bool negative = !text.empty() && text[0] == '-';
    if (negative) {
      if (!std::is_signed_v<Int>) return false;
      i = 1;
    }
    if (i == text.size()) return false;
    // Accumulate toward the sign's limit, so that the most negative value parses too.
    using Wide = std::conditional_t<std::is_signed_v<Int>, long long, unsigned long long>;
    const Wide limit = negative ? static_cast<Wide>(std::numeric_limits<Int>::min())
                                : static_cast<Wide>(std::numeric_limits<Int>::max());
    Wide value = 0;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (c < '0' || c > '9') return false;
      const int digit = c - '0';
      if (negative) {
        if (value < (limit + digit) / 10) return false;
        value = value * 10 - digit;
      } else {
        if (value > (limit - digit) / 10) return false;
        value = value * 10 + digit;
      }
    }
    if (value < static_cast<Wide>(min) || value > static_cast<Wide>(max)) return false;
    *out = static_cast<Int>(value);
    return true;
  }

  template <typename Int>
  static std::string RangeText(Int min, Int max) {
    const bool unbounded = max == std::numeric_limits<Int>::max();
    if (unbounded && min == 1) return "a positive integer";
    if (unbounded) return "an integer of at least " + std::to_string(min);
    return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  }

  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace tessera::plugin
