// Daemon configuration: a YAML file mapped onto tessera.v1.DaemonConfig (tessera/v1/config.proto)
// and from there onto Options, so that a service embedding the scheduler (tesserad) is
// configured by a file whose every key is a documented protobuf field (docs/daemon-config.md).
//
// A field left out of the file keeps its embedded default; no file at all gives a scheduler on a
// small simulated cluster with its store in ./var/tessera.db. Unknown keys, wrong types and bad
// values are refused with INVALID_ARGUMENT whose message starts with the file, line and column
// (for what the YAML parser sees) or the field path (for values checked afterwards), e.g.
// "tesserad.yaml:4:3: store.max_bacth: unknown field (...)" or
// "store.max_batch: must be > 0, got 0".
//
// Thread safety: free functions on values; safe to call from any thread.
#pragma once

#include <string>

#include "tessera/export.h"
#include "tessera/options.h"
#include "tessera/status.h"
#include "tessera/v1/config.pb.h"

namespace tessera {

// Reads the YAML file at `path` (empty: no file), fills every field left unset with its
// embedded default (ApplyDaemonConfigDefaults) and validates the result (ValidateDaemonConfig).
// Returns the effective configuration: every optional field is set.
// Errors: NOT_FOUND when the file cannot be read; INVALID_ARGUMENT for YAML that does not parse
// or does not match the message ("<path>:<line>:<column>: <field>: <problem>") and for bad
// values ("<field>: <problem>").
TESSERA_EXPORT StatusOr<v1::DaemonConfig> LoadDaemonConfig(const std::string& path);

// Sets every field of `config` that is unset to its embedded default: the store in
// ./var/tessera.db, the default priority classes and fatal XIDs, the default simulated cluster
// (unless simulated_cluster_file or executor_plugin is set), the server on 127.0.0.1:8080, and
// an empty plugin_dirs to the one directory an install puts plugins in,
// <libdir>/tessera/plugins beside libtessera.
TESSERA_EXPORT void ApplyDaemonConfigDefaults(v1::DaemonConfig* config);

// Checks every value of `config`, as completed by ApplyDaemonConfigDefaults (a copy is completed
// first, so a partial message may be passed). Errors: INVALID_ARGUMENT naming the first bad
// field ("auth.tokens[0].sha256: must be 64 hex digits").
TESSERA_EXPORT Status ValidateDaemonConfig(const v1::DaemonConfig& config);

// The library Options `config` describes, after completing and validating it as above and
// running the checks Scheduler::Open makes. The daemon-only sections (server, auth) are not part
// of Options. The clock is left null (the real clock). Errors: INVALID_ARGUMENT as above.
TESSERA_EXPORT StatusOr<Options> ToOptions(const v1::DaemonConfig& config);

}  // namespace tessera
