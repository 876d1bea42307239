// ReadFileText: a whole file as a string, for the small credential files the configs name
// (kubeconfig, CA bundles, keys, tokens). False, with errno's text in `error`, when it cannot be
// read.
#pragma once

#include <string>

namespace tessera::kube {

bool ReadFileText(const std::string& path, std::string* text, std::string* error);

}  // namespace tessera::kube
