// Jobs a backend submitted: a job source (a Kubernetes backend taking in pods that name Tessera
// as their scheduler) submits work with BackendEvent SUBMIT_JOB and an external id, and the
// host keeps that id as the job's idempotency key in the scope "backend:<backend name>"
// (api/idempotency_key.h stores it as "<scope>\x1f<key>"). No tenant can submit in that scope:
// the daemon scopes a tenant's keys by its queue prefix, and queue names have no ':'. So the
// stored key alone says which backend took the job in, and only that backend's launches are
// told its external id (LaunchTask.external_id).
//
// Free functions on values; safe from any thread.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

inline constexpr std::string_view kBackendScopePrefix = "backend:";

// The idempotency scope of the jobs backend `name` submits.
inline std::string BackendSubmitScope(std::string_view backend) {
  return std::string(kBackendScopePrefix) + std::string(backend);
}

// For a stored idempotency key in a backend's scope: the backend and the external id; false for
// any other key.
inline bool ParseBackendSubmitKey(std::string_view stored, std::string* backend,
                                  std::string* external_id) {
  if (stored.substr(0, kBackendScopePrefix.size()) != kBackendScopePrefix) return false;
  const size_t separator = stored.find('\x1f');
  if (separator == std::string_view::npos) return false;
  *backend = std::string(
      stored.substr(kBackendScopePrefix.size(), separator - kBackendScopePrefix.size()));
  *external_id = std::string(stored.substr(separator + 1));
  return !backend->empty() && !external_id->empty();
}

}  // namespace tessera
