// Fuzz target: a tesserad configuration file, as LoadDaemonConfig reads it: YAML onto
// tessera.v1.DaemonConfig, the embedded defaults, validation, then the library Options it maps
// to (ToOptions). Properties: errors are INVALID_ARGUMENT with a message; filling in the
// defaults twice changes nothing; a configuration ToOptions accepts also passes
// ValidateDaemonConfig.
#include <cstdint>
#include <string>

#include "config/yaml_proto.h"
#include "fuzz_support.h"
#include "tessera/daemon_config.h"

namespace {

void CheckRefusal(const tessera::Status& status) {
  FUZZ_CHECK(status.code() == tessera::StatusCode::kInvalidArgument);
  FUZZ_CHECK(!status.message().empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tessera::v1::DaemonConfig config;
  const tessera::Status parsed = tessera::YamlStringToMessage(text, "tesserad.yaml", &config);
  if (!parsed.ok()) {
    CheckRefusal(parsed);
    return 0;
  }
  tessera::v1::DaemonConfig once = config;
  tessera::ApplyDaemonConfigDefaults(&once);
  tessera::v1::DaemonConfig twice = once;
  tessera::ApplyDaemonConfigDefaults(&twice);
  FUZZ_CHECK(tessera_fuzz::DeterministicBytes(once) == tessera_fuzz::DeterministicBytes(twice));

  const tessera::StatusOr<tessera::Options> options = tessera::ToOptions(config);
  const tessera::Status valid = tessera::ValidateDaemonConfig(config);
  if (options.ok()) {
    FUZZ_CHECK(valid.ok());
  } else {
    CheckRefusal(options.status());
  }
  if (!valid.ok()) CheckRefusal(valid);
  return 0;
}
