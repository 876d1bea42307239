// LoadKubeconfig: a ClusterConfig from a kubeconfig file, as kubectl reads one. The file is
// `options.path`, else the first path in $KUBECONFIG (a colon-separated list; merging several
// files is not supported, the first one that exists is read), else ~/.kube/config. The context
// is `options.context`, else the file's `current-context`; from it come the cluster
// (`server`, `certificate-authority` or `-data`, `insecure-skip-tls-verify`, `tls-server-name`),
// the user (`token`, `tokenFile`, `client-certificate` or `-data`, `client-key` or `-data`) and
// the namespace. `-data` fields are base64 PEM; file fields are read now, relative paths taken
// against the kubeconfig's own folder. A user with `exec` (credential plugins) or
// `auth-provider` is refused, naming the field, since this client runs no external programs.
//
// Every error is kind kConfig and names the file and the field ("kubeconfig /x/config:
// users[alice].user.client-key-data: not valid base64"). Reads only the files it names; safe
// from any thread.
#pragma once

#include <string>

#include "kube/cluster_config.h"
#include "kube/kube_error.h"

namespace tessera::kube {

struct KubeconfigOptions {
  std::string path;     // empty: $KUBECONFIG, then ~/.kube/config
  std::string context;  // empty: the file's current-context
};

KubeOutcome<ClusterConfig> LoadKubeconfig(const KubeconfigOptions& options = {});

// The same, from kubeconfig text already in memory; `path` names it in errors and is the folder
// relative file paths are taken against.
KubeOutcome<ClusterConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                           const std::string& context = {});

// Base64 (RFC 4648, line breaks allowed) to bytes; false on anything else.
bool DecodeBase64(const std::string& text, std::string* bytes);

}  // namespace tessera::kube
