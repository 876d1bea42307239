// KeyValueConfig (sdk/include/tessera/plugin/key_value_config.h): the grammar, and each error it
// documents, provoked.
#include "tessera/plugin/key_value_config.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

namespace tessera::plugin {
namespace {

const std::vector<std::string> kKeys = {"name", "count", "offset", "big"};

// The message Parse refuses `text` with ("ok" when it accepts it).
std::string Refusal(const std::string& text) {
  KeyValueConfig config;
  const PluginStatus status = KeyValueConfig::Parse(text, kKeys, &config);
  if (status.ok()) return "ok";
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  return status.message;
}

TEST_CASE("key=value config: comments, blank lines and spaces; keys left out keep defaults") {
  KeyValueConfig config;
  REQUIRE(KeyValueConfig::Parse("# a comment\n\n  name =  box-1  # trailing\r\n\tcount=7\n", kKeys,
                                &config)
              .ok());
  std::string name = "default";
  int count = 1;
  int offset = -3;
  REQUIRE(config.String("name", &name).ok());
  REQUIRE(config.Integer("count", 1, 10, &count).ok());
  REQUIRE(config.Integer("offset", -100, 100, &offset).ok());
  CHECK(name == "box-1");
  CHECK(count == 7);
  CHECK(offset == -3);  // not given: untouched.
  CHECK(config.Has("count"));
  CHECK_FALSE(config.Has("offset"));
  CHECK(KeyValueConfig::Parse("", kKeys, &config).ok());
}

TEST_CASE("key=value config: lines that are not settings name the line") {
  CHECK(Refusal("name = a\njust words") == "config line 2: expected key = value, got 'just words'");
  CHECK(Refusal("= 3") == "config line 1: no key before '='");
  CHECK(Refusal("# x\ncolour = blue") ==
        "config line 2: unknown key 'colour' (known: name, count, offset, big)");
  CHECK(Refusal("count = 1\nname = a\ncount = 2") ==
        "config line 3: 'count' is given again (first on line 1)");
}

TEST_CASE("key=value config: values out of range name the key, the value and the line") {
  KeyValueConfig config;
  REQUIRE(KeyValueConfig::Parse("name =\ncount = 11\noffset = -101\nbig = 99999999999999999999\n",
                                kKeys, &config)
              .ok());
  std::string name;
  int count = 0;
  int offset = 0;
  int64_t big = 0;
  CHECK(config.String("name", &name).message == "name: must not be empty (config line 1)");
  CHECK(config.String("name", &name, /*allow_empty=*/true).ok());
  CHECK(config.Integer("count", 1, 10, &count).message ==
        "count: must be an integer from 1 to 10, got '11' (config line 2)");
  CHECK(config.Integer("offset", -100, 100, &offset).message ==
        "offset: must be an integer from -100 to 100, got '-101' (config line 3)");
  CHECK(config.Integer("big", int64_t{1}, INT64_MAX, &big).message ==
        "big: must be a positive integer, got '99999999999999999999' (config line 4)");
  CHECK(count == 0);  // refused: untouched.
  CHECK(config.Integer("count", 0, INT32_MAX, &count).ok());
  CHECK(count == 11);  // in range there: taken.
}

TEST_CASE("key=value config: integers at the type's limits, and what is not an integer") {
  KeyValueConfig config;
  REQUIRE(KeyValueConfig::Parse("big = -9223372036854775808\ncount = 2147483648\nname = 1x\n"
                                "offset = -\n",
                                kKeys, &config)
              .ok());
  int64_t big = 0;
  REQUIRE(config.Integer("big", INT64_MIN, INT64_MAX, &big).ok());
  CHECK(big == INT64_MIN);
  int count = 0;
  CHECK(config.Integer("count", INT32_MIN, INT32_MAX, &count).message ==
        "count: must be an integer of at least -2147483648, got '2147483648' (config line 2)");
  CHECK_FALSE(config.Integer("name", 0, 100, &count).ok());
  CHECK_FALSE(config.Integer("offset", -5, 5, &count).ok());
  unsigned width = 0;
  CHECK_FALSE(config.Integer("big", 0u, 10u, &width).ok());  // negative for an unsigned.
}

}  // namespace
}  // namespace tessera::plugin
