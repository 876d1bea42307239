#!/usr/bin/python3
"""The plugin conformance kit against the Kubernetes backend, which needs an API server.

    run_conformance.py <tessera-plugin-conformance> <libtessera_plugin_kubernetes.so>

Starts the fake API server (fake_apiserver.py, over a real etcd) with one Ready GPU node and a
namespace, writes the backend's config (its kubeconfig, that namespace, a default image), and
runs the kit with the node as the executor node; the kit's exit status is this script's. The
fake's kubelet stand-in runs the conformance kit's pods. Exits 77 (ctest: skipped) when etcd,
openssl or python3-etcd3 is missing, as the other Kubernetes tests do.
"""

import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def skip(why):
    print("SKIP conformance_kubernetes: " + why)
    sys.exit(77)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    conformance, plugin = sys.argv[1], sys.argv[2]
    for tool in ("etcd", "openssl"):
        if shutil.which(tool) is None:
            skip(tool + " not found (scripts/install-deps.sh)")
    try:
        import etcd3  # noqa: F401
    except ImportError:
        skip("python3-etcd3 missing (scripts/install-deps.sh)")

    state = tempfile.mkdtemp(prefix="tessera-kube-conformance-")
    info_file = os.path.join(state, "info.json")
    log = open(os.path.join(state, "fake.log"), "w")
    fake = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "fake_apiserver.py"), "--launch-etcd",
         "--state-dir", state, "--info-file", info_file, "--exit-on-stdin-eof"],
        stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    try:
        info = None
        for _ in range(600):
            if os.path.exists(info_file):
                text = open(info_file).read()
                if text.endswith("\n"):
                    info = json.loads(text)
                    break
            if fake.poll() is not None:
                print("the fake API server exited at start; see " + log.name)
                return 1
            time.sleep(0.1)
        if info is None:
            print("the fake API server did not start; see " + log.name)
            return 1

        context = ssl.create_default_context(cafile=info["ca"])

        def post(path, body):
            request = urllib.request.Request(
                info["url"] + path, data=json.dumps(body).encode(), method="POST",
                headers={"Authorization": "Bearer " + info["token"],
                         "Content-Type": "application/json"})
            urllib.request.urlopen(request, context=context).read()

        post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": "conformance"}})
        gpu = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"}
        post("/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "conformance-0",
                         "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
            "status": {"allocatable": gpu, "capacity": gpu,
                       "conditions": [{"type": "Ready", "status": "True"}]}})
        config = os.path.join(state, "kubernetes.conf")
        with open(config, "w") as out:
            out.write("kubeconfig = %s\ncontext = fake\nnamespace = conformance\n"
                      "default_image = busybox:1.36\n" % info["kubeconfig"])
        return subprocess.call([conformance, plugin, "--config", config,
                                "--executor-node", "conformance-0"])
    finally:
        fake.stdin.close()
        try:
            fake.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fake.kill()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
