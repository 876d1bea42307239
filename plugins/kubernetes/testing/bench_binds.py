#!/usr/bin/python3
"""The fake API server's own ceiling: pods created and bound per second, measured alone.

    bench_binds.py [--nodes 1000] [--pods 3000] [--threads 8] [--no-kubelet] [--url URL --token T --ca CA]

Without --url it starts the fake (--launch-etcd) itself. It makes the nodes, creates the pods
unbound (schedulerName tessera), then binds each to a node through POST .../pods/<name>/binding
from --threads threads, each on one keep-alive HTTPS connection with a bearer token, and prints
creates/s and binds/s. With the kubelet on (the default) every bind also makes the kubelet write
the pod Running, as in the benchmark against Tessera; --no-kubelet measures the server alone.
"""

import argparse
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))


class Conn:
    def __init__(self, url, token, ca):
        u = urllib.parse.urlsplit(url)
        if u.scheme == "https":
            self.c = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cafile=ca))
        else:
            self.c = http.client.HTTPConnection(u.hostname, u.port)
        self.headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

    def call(self, method, path, body=None):
        self.c.request(method, path, json.dumps(body) if body is not None else None, self.headers)
        r = self.c.getresponse()
        data = r.read()
        if r.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:200]))
        return data


def parallel(n_threads, items, work, url, token, ca):
    items = list(items)
    chunks = [items[i::n_threads] for i in range(n_threads)]
    errors = []

    def run(chunk):
        conn = Conn(url, token, ca)
        try:
            for item in chunk:
                work(conn, item)
        except Exception as e:  # report, do not hide
            errors.append(e)
    threads = [threading.Thread(target=run, args=(c,)) for c in chunks]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - began


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=3000)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--no-kubelet", action="store_true")
    p.add_argument("--url")
    p.add_argument("--token")
    p.add_argument("--ca")
    args = p.parse_args()
    proc = None
    if not args.url:
        state = tempfile.mkdtemp(prefix="bench-binds-")
        info = os.path.join(state, "info.json")
        cmd = [sys.executable, os.path.join(HERE, "fake_apiserver.py"), "--launch-etcd", "--state-dir", state,
               "--info-file", info, "--exit-on-stdin-eof"] + (["--no-kubelet"] if args.no_kubelet else [])
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        while not os.path.exists(info):
            if proc.poll() is not None:
                raise SystemExit("the fake did not start")
            time.sleep(0.1)
        meta = json.load(open(info))
        args.url, args.token, args.ca = meta["url"], meta["token"], meta["ca"]
    try:
        ns = "bench"
        Conn(args.url, args.token, args.ca).call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        node = lambda i: {"metadata": {"name": "node-%04d" % i},
                          "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}}
        t_nodes = parallel(args.threads, range(args.nodes), lambda c, i: c.call("POST", "/api/v1/nodes", node(i)),
                           args.url, args.token, args.ca)
        pod = lambda i: {"metadata": {"name": "pod-%05d" % i},
                         "spec": {"schedulerName": "tessera", "restartPolicy": "Never",
                                  "containers": [{"name": "main", "image": "x:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
        t_create = parallel(args.threads, range(args.pods),
                            lambda c, i: c.call("POST", "/api/v1/namespaces/%s/pods" % ns, pod(i)), args.url, args.token, args.ca)
        bind = lambda c, i: c.call("POST", "/api/v1/namespaces/%s/pods/pod-%05d/binding" % (ns, i),
                                   {"metadata": {"name": "pod-%05d" % i}, "target": {"kind": "Node", "name": "node-%04d" % (i % args.nodes)}})
        t_bind = parallel(args.threads, range(args.pods), bind, args.url, args.token, args.ca)
        print(json.dumps({"nodes": args.nodes, "pods": args.pods, "threads": args.threads, "kubelet": not args.no_kubelet,
                          "node_creates_per_s": round(args.nodes / t_nodes), "pod_creates_per_s": round(args.pods / t_create),
                          "binds_per_s": round(args.pods / t_bind)}))
    finally:
        if proc:
            proc.stdin.close()
            proc.wait(10)


if __name__ == "__main__":
    main()
