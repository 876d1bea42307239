#!/usr/bin/python3
"""The plugin conformance kit against the aws-ec2 capacity provider, which needs EC2 and
Kubernetes.

    run_conformance.py <tessera-plugin-conformance> <libtessera_plugin_aws-ec2.so>

Starts the fake Kubernetes API server (plugins/kubernetes/testing/fake_apiserver.py, over a real
etcd) and moto_server behind the EC2 fault proxy (plugins/common/aws/testing/ec2_fault_proxy.py,
which checks every signature and plays each instance's kubelet: /fault/join), writes the
provider's config (one on-demand group, the proxy as endpoint, the fake's kubeconfig, keys in the
environment), and runs the kit with --provision-group, so one instance is launched, joins and is
given back. The kit's exit status is this script's. Exits 77 (ctest: skipped) when moto_server,
etcd, openssl or python3-etcd3 is missing.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
KEY, SECRET = "AKIDCONFORMANCE", "conformance/secret"


def skip(why):
    print("SKIP conformance_aws-ec2: " + why)
    sys.exit(77)


def wait_for_file(path, process, seconds):
    for _ in range(int(seconds * 10)):
        if os.path.exists(path):
            text = open(path).read()
            if text.strip():
                return text
        if process.poll() is not None:
            return None
        time.sleep(0.1)
    return None


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    conformance, plugin = sys.argv[1], sys.argv[2]
    for tool in ("moto_server", "etcd", "openssl"):
        if shutil.which(tool) is None:
            skip(tool + " not found (scripts/install-deps.sh)")
    try:
        import etcd3  # noqa: F401
    except ImportError:
        skip("python3-etcd3 missing (scripts/install-deps.sh)")

    state = tempfile.mkdtemp(prefix="tessera-aws-conformance-")
    info_file = os.path.join(state, "info.json")
    port_file = os.path.join(state, "proxy-port")
    log = open(os.path.join(state, "fakes.log"), "w")
    fake = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "plugins/kubernetes/testing/fake_apiserver.py"),
         "--launch-etcd", "--state-dir", state, "--info-file", info_file, "--exit-on-stdin-eof"],
        stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    # The proxy runs on the python3 of PATH, beside the moto_server it starts.
    proxy = subprocess.Popen(
        ["python3", os.path.join(ROOT, "plugins/common/aws/testing/ec2_fault_proxy.py"),
         "--start-moto", "--port-file", port_file, "--verify-key", KEY, "--verify-secret", SECRET],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        text = wait_for_file(info_file, fake, 60)
        port = wait_for_file(port_file, proxy, 60)
        if text is None or port is None:
            print("a fake did not start; see " + log.name)
            return 1
        info = json.loads(text)
        url = "http://127.0.0.1:" + port.strip()
        join = {"kube_url": info["url"], "token": info["token"], "ca": info["ca"]}
        urllib.request.urlopen(urllib.request.Request(
            url + "/fault/join", data=json.dumps(join).encode(), method="POST")).read()
        config = {
            "cluster": "conformance", "endpoint": url, "poll_interval_ms": 100,
            "credentials": {"shared_credentials_file": "/nonexistent", "imds_endpoint": "off"},
            "join": {"kubeconfig": info["kubeconfig"], "timeout_s": 600},
            "node_groups": [{"name": "a10g", "market": "on-demand", "max_nodes": 2,
                             "image_id": "ami-12c6146b", "zones": ["us-east-1a"],
                             "instance_types": [{"type": "g5.12xlarge",
                                                 "on_demand_price_per_hour": 5.672}]}]}
        path = os.path.join(state, "aws-ec2.json")
        with open(path, "w") as out:
            json.dump(config, out)
        env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET)
        return subprocess.call([conformance, plugin, "--config", path, "--provision-group", "a10g"],
                               env=env)
    finally:
        proxy.terminate()
        fake.stdin.close()
        for process in (proxy, fake):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
