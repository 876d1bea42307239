#!/usr/bin/python3
"""A fake Kubernetes API server backed by a real etcd, for Tessera's Kubernetes tests.

    fake_apiserver.py --launch-etcd [--state-dir DIR] [--port 0] [--info-file FILE]
    fake_apiserver.py --etcd-endpoint http://127.0.0.1:2379 --port 6443 --state-dir DIR
    fake_apiserver.py --launch-etcd --plain-http --anonymous      (quick debugging with curl)

It serves the Kubernetes REST API for core/v1 pods (with status, binding and eviction), nodes
(with status), namespaces, events and bindings, batch/v1 jobs and scheduling.k8s.io/v1
priorityclasses, over HTTPS with bearer tokens and client certificates, keeping every object in
etcd the way kube-apiserver does: resourceVersion is etcd's revision, watches replay from a
revision with etcd's own watch, a compacted revision is 410 Expired. A kubelet stand-in moves
bound pods through their phases. With --launch-etcd it starts etcd (Debian's etcd-server, 3.4)
on free loopback ports in a temporary folder and stops it on exit; once serving, it prints one
JSON line on stdout (and writes it to --info-file): url, kubeconfig, token, viewerToken,
tokenFile, ca, clientCert, clientKey, etcd, stateDir. It runs until SIGTERM, SIGINT or, with
--exit-on-stdin-eof, the end of its standard input. Runs on Debian 12's python3 with
python3-etcd3 (gRPC) and python3-yaml; certificates are made with the openssl command.
plugins/kubernetes/testing/README.md has the control endpoints and the kubelet's annotations.

Where it differs from kube-apiserver (what a test against it cannot show):
- Served: only the kinds above. No services, endpoints, configmaps, secrets, service accounts,
  leases, PodDisruptionBudgets, CRDs, RBAC objects, API aggregation, protobuf (request bodies
  are JSON or YAML, except a protobuf Namespace, which `kubectl create namespace` sends; so
  `kubectl create job|deployment|...` get 415, `kubectl apply/create -f` work; replies are
  always JSON), server-side apply (apply-patch+yaml is 415), exec/logs/attach/port-forward,
  OpenAPI (/openapi/v2 is an empty document, so kubectl validates nothing client-side;
  /openapi/v3 is 404), aggregated discovery (kubectl falls back to the legacy documents),
  dryRun other than on create. Server-side Tables exist for pods, nodes, namespaces, jobs and
  events (other kinds: NAME and AGE).
- Admission: NamespaceLifecycle (namespace must exist, not be terminating), Priority (unknown
  priorityClassName 403, spec.priority from the class, globalDefault) and
  DefaultTolerationSeconds are done; ServiceAccount, LimitRanger, ResourceQuota, PodSecurity,
  NodeRestriction, webhooks are not. Authorization is "everything" except the group
  `fake:read-only` (read verbs only); there is no RBAC and no anonymous access (401).
- Defaulting and validation: a subset (fakekube/validation.py says which); no OpenAPI schema,
  so unknown fields are stored as sent and `fieldValidation=Strict` is not enforced;
  managedFields are not kept.
- Storage: no watch cache, as kube-apiserver with --watch-cache=false: every read goes to etcd;
  list resourceVersion "0" and "NotOlderThan" both read the latest; resourceVersionMatch and
  sendInitialEvents are ignored. Bookmarks are sent every --bookmark-interval seconds (default 5,
  kube-apiserver ~1 min) and carry the newest revision at which the watched resource changed.
  Nothing compacts etcd unless a test asks (/fake/compact); kube-apiserver compacts every 5 min.
  Events have no TTL. Continue tokens have the real format but an expired one gets no fresh
  inconsistent token back.
- Binding (pods/{name}/binding and namespaces/{ns}/bindings): as kube-apiserver's BindingREST,
  one etcd update that checks the Binding's uid and resourceVersion preconditions and refuses a
  pod being deleted, already bound or with schedulingGates (409), then sets spec.nodeName,
  copies the Binding's metadata.annotations (not its labels) onto the pod and sets
  PodScheduled=True. It differs in that dryRun is ignored there (the bind is made), the 201
  Status carries no details, and no NodeRestriction-like check of who binds is made.
- Controllers: no Job controller (jobs are storage only, no pods are made for them), no
  scheduler (pods stay Pending until bound), no node lifecycle controller and no pod GC (a
  NotReady or deleted node keeps its pods as they are), garbage collection only for a job
  deleted with propagation Background or Foreground (its pods are deleted) and namespace
  deletion (everything in it is deleted with grace 0, then the namespace). The kubelet stand-in is described
  in fakekube/kubelet.py; no node heartbeats.
"""

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fakekube import credentials  # noqa: E402
from fakekube.etcd_store import Etcd  # noqa: E402
from fakekube.errors import ApiError  # noqa: E402
from fakekube.kubelet import Kubelet  # noqa: E402
from fakekube.registry import Registry  # noqa: E402
from fakekube.resources import NAMESPACES, PRIORITY_CLASSES  # noqa: E402
from fakekube.server import App, Settings  # noqa: E402
from fakekube.watch import WatchHub  # noqa: E402


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: etcd goes when the fake goes


class EtcdProcess:
    """etcd started in a temporary folder on free loopback ports, stopped by stop()."""

    def __init__(self, binary="etcd"):
        if shutil.which(binary) is None:
            raise SystemExit("fake_apiserver: etcd not found (Debian package etcd-server)")
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self.dir = tempfile.mkdtemp(prefix="fake-etcd-", dir=base)
        self.proc = None
        for attempt in range(5):
            client, peer = _free_port(), _free_port()
            self.endpoint = "http://127.0.0.1:%d" % client
            peer_url = "http://127.0.0.1:%d" % peer
            log = open(os.path.join(self.dir, "etcd.log"), "ab")
            self.proc = subprocess.Popen(
                [binary, "--name", "fake", "--data-dir", os.path.join(self.dir, "data"),
                 "--listen-client-urls", self.endpoint, "--advertise-client-urls", self.endpoint,
                 "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                 "--initial-cluster", "fake=" + peer_url, "--logger", "zap", "--log-level", "warn",
                 "--snapshot-count", "100000"],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
            if self._wait_ready():
                return
            self._kill()
        raise SystemExit("fake_apiserver: etcd did not start; see %s/etcd.log" % self.dir)

    def _wait_ready(self):
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                Etcd(self.endpoint).status()
                return True
            except Exception:
                time.sleep(0.1)
        return False

    def _kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def stop(self):
        self._kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def bootstrap(registry):
    """What a fresh cluster has: the four system namespaces and the two system priority classes."""
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        try:
            registry.create(NAMESPACES, None, {"metadata": {"name": name}})
        except ApiError as e:
            if e.code != 409:
                raise
    for name, value in (("system-cluster-critical", 2000000000), ("system-node-critical", 2000001000)):
        try:
            registry.create(PRIORITY_CLASSES, None, {"metadata": {"name": name}, "value": value,
                                                     "description": "Used for system critical pods that must run in the cluster."})
        except ApiError as e:
            if e.code != 409:
                raise


def main(argv=None):
    p = argparse.ArgumentParser(description="A fake Kubernetes API server backed by a real etcd.")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--etcd-endpoint", help="etcd to use, e.g. http://127.0.0.1:2379")
    where.add_argument("--launch-etcd", action="store_true", help="start etcd on free loopback ports, stop it on exit")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    p.add_argument("--state-dir", help="where certificates, tokens and the kubeconfig go (default: a temporary folder, removed on exit)")
    p.add_argument("--plain-http", action="store_true", help="serve HTTP instead of HTTPS (bearer tokens still checked)")
    p.add_argument("--anonymous", action="store_true", help="with --plain-http: requests without credentials act as admin")
    p.add_argument("--tls-cert", help="serving certificate (default: made, signed by the made CA)")
    p.add_argument("--tls-key")
    p.add_argument("--client-ca", help="CA that signs client certificates (default: the made CA)")
    p.add_argument("--token-file", help="token,user,uid,\"groups\" lines (default: made, with an admin and a viewer)")
    p.add_argument("--kubeconfig", help="where to write the kubeconfig (default: STATE_DIR/kubeconfig)")
    p.add_argument("--info-file", help="also write the JSON line printed at start here")
    p.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks")
    p.add_argument("--watch-timeout", type=float, default=1800.0, help="server-side watch timeout without timeoutSeconds")
    p.add_argument("--no-kubelet", action="store_true", help="no kubelet stand-in: bound pods stay as they are")
    p.add_argument("--no-grace-reaper", action="store_true", help="pods past their deletionTimestamp are not deleted unless the kubelet does it")
    p.add_argument("--exit-on-stdin-eof", action="store_true", help="stop when standard input closes (for test harnesses)")
    p.add_argument("--verbose", action="store_true", help="log every request on stderr")
    args = p.parse_args(argv)

    cleanup = []
    etcd_proc = None
    if args.launch_etcd:
        etcd_proc = EtcdProcess()
        cleanup.append(etcd_proc.stop)
        endpoint = etcd_proc.endpoint
    else:
        endpoint = args.etcd_endpoint
    state = args.state_dir
    if state:
        os.makedirs(state, exist_ok=True)
    else:
        state = tempfile.mkdtemp(prefix="fake-apiserver-")
        cleanup.append(lambda: shutil.rmtree(state, ignore_errors=True))

    def stop(*_):
        for fn in reversed(cleanup):
            try:
                fn()
            except Exception:
                pass
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    try:
        etcd = Etcd(endpoint)
        etcd.status()
    except Exception as e:
        print("fake_apiserver: cannot reach etcd at %s: %s" % (endpoint, e), file=sys.stderr)
        stop()

    info = {"etcd": endpoint, "stateDir": os.path.abspath(state)}
    tls = None
    tokens_path = args.token_file
    admin_token = viewer_token = None
    if not tokens_path:
        admin_token, viewer_token = credentials.new_token(), credentials.new_token()
        tokens_path = os.path.join(state, "tokens.csv")
        credentials.write_tokens(tokens_path, [(admin_token, "admin", "1", ["system:masters"]),
                                               (viewer_token, "viewer", "2", ["fake:read-only"])])
    tokens = credentials.read_tokens(tokens_path)
    if admin_token is None:
        admin_token = next((t for t, (u, g) in tokens.items() if "system:masters" in g), None)
    token_file = None
    if admin_token:
        token_file = os.path.join(state, "admin.token")
        with open(token_file, "w") as f:
            f.write(admin_token)  # no newline, as a service account token file
    ca = client_cert = client_key = None
    if not args.plain_http:
        import ssl
        if not (args.tls_cert and args.tls_key and args.client_ca):
            credentials.make_pki(state)
        cert, key = args.tls_cert or os.path.join(state, "server.crt"), args.tls_key or os.path.join(state, "server.key")
        ca = args.client_ca or os.path.join(state, "ca.crt")
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
        tls.load_verify_locations(ca)
        tls.verify_mode = ssl.CERT_OPTIONAL
        if os.path.exists(os.path.join(state, "admin.crt")):
            client_cert, client_key = os.path.join(state, "admin.crt"), os.path.join(state, "admin.key")

    registry = Registry(etcd)
    registry.on_namespace_deleted = registry.finish_namespace
    bootstrap(registry)
    kubelet = Kubelet(registry, enabled=not args.no_kubelet, grace_reaper=not args.no_grace_reaper)
    kubelet.start()
    cleanup.append(kubelet.stop)
    settings = Settings(tokens=tokens, tls=tls, bookmark_interval=args.bookmark_interval,
                        watch_timeout=args.watch_timeout, verbose=args.verbose,
                        anonymous_admin=args.plain_http and args.anonymous)
    app = App(registry, WatchHub(), kubelet, settings)
    port = app.serve(args.host, args.port)
    url = "%s://%s:%d" % ("http" if args.plain_http else "https", args.host, port)
    kubeconfig = args.kubeconfig or os.path.join(state, "kubeconfig")
    credentials.write_kubeconfig(kubeconfig, url, ca_file=ca, client_cert=client_cert, client_key=client_key,
                                 token=admin_token, token_file=token_file)
    info.update({"url": url, "kubeconfig": os.path.abspath(kubeconfig), "token": admin_token,
                 "viewerToken": viewer_token, "tokenFile": os.path.abspath(tokens_path), "ca": ca,
                 "clientCert": client_cert, "clientKey": client_key, "pid": os.getpid()})
    line = json.dumps(info)
    if args.info_file:
        with open(args.info_file + ".tmp", "w") as f:
            f.write(line + "\n")
        os.rename(args.info_file + ".tmp", args.info_file)
    print(line, flush=True)
    if args.exit_on_stdin_eof:
        threading.Thread(target=lambda: (sys.stdin.read(), stop()), daemon=True).start()
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
