#!/usr/bin/python3
"""Validates the fake Kubernetes API server (plugins/kubernetes/testing) against real clients.

Starts etcd and the fake (fake_apiserver.py --launch-etcd), then drives it with the official
Kubernetes Python client (Debian's python3-kubernetes) and with kubectl, and checks that it
answers as kube-apiserver does: objects and their metadata, Status errors with their codes and
reasons, selectors, paging, watches (replay, selectors, bookmarks, timeout, 410 at the start and
mid-stream), binding, graceful delete, the kubelet stand-in's phases, jobs, patches, and
authentication. Exits 77 (skipped) when etcd, kubectl, python3-kubernetes or python3-etcd3 is
missing; scripts/install-deps.sh installs them.

    tests/kubernetes/kube_fake_apiserver_test.py [-v] [TestCase.test_name ...]
"""

import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "..", "..", "plugins", "kubernetes", "testing", "fake_apiserver.py")


def _skip(why):
    print("SKIP kube_fake_apiserver: %s (scripts/install-deps.sh installs it)" % why)
    sys.exit(77)


for tool, package in (("etcd", "etcd-server"), ("kubectl", "kubectl or kubernetes-client"), ("openssl", "openssl")):
    if shutil.which(tool) is None:
        _skip("%s not found (Debian package %s)" % (tool, package))
try:
    import etcd3  # noqa: F401  (the fake needs it)
    from kubernetes import client, config, watch
    from kubernetes.client.rest import ApiException
except ImportError as e:
    _skip("%s (Debian packages python3-kubernetes, python3-etcd3; run with /usr/bin/python3)" % e)

FAKE_STATE = {}


def setUpModule():
    warnings.filterwarnings("ignore", category=ResourceWarning)  # the client leaves pooled sockets to the GC
    state = tempfile.mkdtemp(prefix="kube-fake-test-")
    info = os.path.join(state, "info.json")
    log = open(os.path.join(state, "fake.log"), "w")
    proc = subprocess.Popen([sys.executable, FAKE, "--launch-etcd", "--state-dir", state, "--info-file", info,
                             "--bookmark-interval", "1", "--exit-on-stdin-eof"],
                            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while not os.path.exists(info):
        if proc.poll() is not None or time.time() > deadline:
            log.close()
            raise RuntimeError("the fake did not start:\n" + open(os.path.join(state, "fake.log")).read())
        time.sleep(0.1)
    FAKE_STATE.update(json.load(open(info)), proc=proc, dir=state)


def tearDownModule():
    proc = FAKE_STATE.get("proc")
    if proc:
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if proc.returncode not in (0, -15) or os.environ.get("KUBE_FAKE_LOG"):
            print(open(os.path.join(FAKE_STATE["dir"], "fake.log")).read())
    shutil.rmtree(FAKE_STATE.get("dir", ""), ignore_errors=True)


_CLIENTS = {}


def _api_client(context):
    if context not in _CLIENTS:
        _CLIENTS[context] = config.new_client_from_config(config_file=FAKE_STATE["kubeconfig"], context=context)
    return _CLIENTS[context]


def api(context="fake"):
    return client.CoreV1Api(_api_client(context))


def batch():
    return client.BatchV1Api(_api_client("fake"))


def raw(method, path, body=None, token=None, cert=True, content_type="application/json", headers=None):
    """(code, headers, parsed body) of one HTTPS request, by default as the admin certificate."""
    ctx = ssl.create_default_context(cafile=FAKE_STATE["ca"])
    if cert:
        ctx.load_cert_chain(FAKE_STATE["clientCert"], FAKE_STATE["clientKey"])
    data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
    req = urllib.request.Request(FAKE_STATE["url"] + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", content_type)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            text = resp.read()
            return resp.status, resp.headers, json.loads(text) if text.startswith(b"{") else text
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, e.headers, json.loads(text) if text.startswith(b"{") else text


def kubectl(*args, check=True, context=None, input=None):
    cmd = ["kubectl", "--kubeconfig", FAKE_STATE["kubeconfig"]] + (["--context", context] if context else []) + list(args)
    out = subprocess.run(cmd, capture_output=True, text=True, input=input, timeout=60)
    if check and out.returncode != 0:
        raise AssertionError("%s failed (%d): %s%s" % (" ".join(cmd), out.returncode, out.stdout, out.stderr))
    return out


def pod_body(name=None, generate=None, labels=None, annotations=None, node=None, gpus=None, scheduler=None,
             restart="Never", grace=None):
    meta = {"labels": labels or {}, "annotations": annotations or {}}
    if name:
        meta["name"] = name
    if generate:
        meta["generateName"] = generate
    container = {"name": "main", "image": "busybox:1.36"}
    if gpus is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec = {"containers": [container], "restartPolicy": restart}
    if node:
        spec["nodeName"] = node
    if scheduler:
        spec["schedulerName"] = scheduler
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def make_namespace(name):
    api().create_namespace({"metadata": {"name": name}})
    return name


def make_node(name, ready=True, gpus="8"):
    status = {"capacity": {"nvidia.com/gpu": gpus, "nvidia.com/mig-1g.10gb": "7", "cpu": "64", "memory": "512Gi"},
              "allocatable": {"nvidia.com/gpu": gpus, "nvidia.com/mig-1g.10gb": "7", "cpu": "64", "memory": "512Gi"}}
    if not ready:
        status["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    code, _, node = raw("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                   "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "H100"}},
                                                   "status": status})
    assert code == 201, node
    return node


def wait_for(fn, timeout=10.0, what="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def phase(ns, name):
    try:
        return api().read_namespaced_pod(name, ns).status.phase
    except ApiException as e:
        return "gone" if e.status == 404 else e.status


class RawWatch:
    """A watch read line by line on a thread, as the backend's client will read it."""

    def __init__(self, path):
        ctx = ssl.create_default_context(cafile=FAKE_STATE["ca"])
        ctx.load_cert_chain(FAKE_STATE["clientCert"], FAKE_STATE["clientKey"])
        self.events = []
        self.status = None
        self.ended = threading.Event()
        self.cond = threading.Condition()
        try:
            self.resp = urllib.request.urlopen(urllib.request.Request(FAKE_STATE["url"] + path), context=ctx, timeout=60)
            self.status = self.resp.status
        except urllib.error.HTTPError as e:
            self.status = e.code
            self.error = json.loads(e.read())
            self.ended.set()
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.resp:
                with self.cond:
                    self.events.append(json.loads(line))
                    self.cond.notify_all()
        finally:
            self.ended.set()

    def wait(self, pred, timeout=10.0):
        deadline = time.time() + timeout
        with self.cond:
            while True:
                found = [e for e in self.events if pred(e)]
                if found:
                    return found[0]
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError("no such watch event; got %s" % [(e["type"], e["object"].get("metadata", {}).get("name")) for e in self.events])
                self.cond.wait(left)

    def close(self):
        self.resp.close()


def typed(kind, name):
    return lambda e: e["type"] == kind and e["object"].get("metadata", {}).get("name") == name


class ObjectsAndErrors(unittest.TestCase):
    def test_create_get_list_metadata(self):
        ns = make_namespace("objects")
        v1 = api()
        created = v1.create_namespaced_pod(ns, pod_body(generate="worker-", labels={"app": "a"}))
        self.assertTrue(created.metadata.name.startswith("worker-"))
        self.assertEqual(len(created.metadata.name), len("worker-") + 5)
        self.assertTrue(created.metadata.uid)
        self.assertIsNotNone(created.metadata.creation_timestamp)
        self.assertEqual(created.status.phase, "Pending")
        self.assertEqual(created.spec.scheduler_name, "default-scheduler")
        second = v1.create_namespaced_pod(ns, pod_body(name="second"))
        self.assertGreater(int(second.metadata.resource_version), int(created.metadata.resource_version))
        got = v1.read_namespaced_pod(created.metadata.name, ns)
        self.assertEqual(got.metadata.uid, created.metadata.uid)
        self.assertEqual(got.metadata.resource_version, created.metadata.resource_version)
        pods = v1.list_namespaced_pod(ns)
        self.assertEqual(sorted(p.metadata.name for p in pods.items), sorted([created.metadata.name, "second"]))
        self.assertGreaterEqual(int(pods.metadata.resource_version), int(second.metadata.resource_version))
        everywhere = v1.list_pod_for_all_namespaces(field_selector="metadata.namespace=" + ns)
        self.assertEqual(len(everywhere.items), 2)

    def test_status_bodies(self):
        ns = make_namespace("errors")
        v1 = api()
        cases = []
        with self.assertRaises(ApiException) as e:
            v1.read_namespaced_pod("missing", ns)
        cases.append((e.exception, 404, "NotFound"))
        v1.create_namespaced_pod(ns, pod_body(name="dup"))
        with self.assertRaises(ApiException) as e:
            v1.create_namespaced_pod(ns, pod_body(name="dup"))
        cases.append((e.exception, 409, "AlreadyExists"))
        with self.assertRaises(ApiException) as e:
            v1.create_namespaced_pod(ns, pod_body(name="Bad_Name"))
        cases.append((e.exception, 422, "Invalid"))
        self.assertEqual(json.loads(e.exception.body)["details"]["causes"][0]["field"], "metadata.name")
        with self.assertRaises(ApiException) as e:
            v1.create_namespaced_pod("no-such-namespace", pod_body(name="x"))
        cases.append((e.exception, 404, "NotFound"))
        self.assertIn('namespaces "no-such-namespace" not found', json.loads(e.exception.body)["message"])
        for exc, code, reason in cases:
            body = json.loads(exc.body)
            self.assertEqual((exc.status, body["kind"], body["status"], body["code"], body["reason"]),
                             (code, "Status", "Failure", code, reason), body)

    def test_validation_that_clients_rely_on(self):
        ns = make_namespace("validation")
        bad = pod_body(name="gpu")
        bad["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "2"}}
        code, _, body = raw("POST", "/api/v1/namespaces/%s/pods" % ns, bad)
        self.assertEqual((code, body["reason"]), (422, "Invalid"))
        self.assertIn("spec.containers[0].resources.requests[nvidia.com/gpu]", body["message"])
        self.assertIn("must be equal to nvidia.com/gpu limit of 1", body["message"])
        bad["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "1"}}
        code, _, body = raw("POST", "/api/v1/namespaces/%s/pods" % ns, bad)
        self.assertEqual(code, 422)
        self.assertIn("Limit must be set for non overcommitable resources", body["message"])
        bad["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "500m"}}
        code, _, body = raw("POST", "/api/v1/namespaces/%s/pods" % ns, bad)
        self.assertEqual(code, 422)
        self.assertIn("must be an integer", body["message"])
        noimage = pod_body(name="noimage")
        del noimage["spec"]["containers"][0]["image"]
        code, _, body = raw("POST", "/api/v1/namespaces/%s/pods" % ns, noimage)
        self.assertEqual(code, 422)
        self.assertEqual(body["details"]["causes"][0]["field"], "spec.containers[0].image")
        good = pod_body(name="gpu", gpus=2)
        code, _, body = raw("POST", "/api/v1/namespaces/%s/pods" % ns, good)
        self.assertEqual(code, 201, body)
        self.assertEqual(body["spec"]["containers"][0]["resources"]["requests"], {"nvidia.com/gpu": "2"})
        code, _, body = raw("PATCH", "/api/v1/namespaces/%s/pods/gpu" % ns, {"spec": {"nodeName": "elsewhere"}},
                            content_type="application/merge-patch+json")
        self.assertEqual(code, 422)
        self.assertIn("pod updates may not change fields", body["message"])
        code, _, body = raw("POST", "/api/v1/namespaces/%s/pods" % ns, dict(pod_body(name="prio"), spec=dict(
            pod_body()["spec"], priorityClassName="nope")))
        self.assertEqual((code, body["reason"]), (403, "Forbidden"))
        code, _, body = raw("POST", "/api/v1/nodes", {"metadata": {"name": "badnode"}, "status": {"capacity": {"nvidia.com/gpu": "lots"}}})
        self.assertEqual(code, 422)
        self.assertIn("status.capacity[nvidia.com/gpu]", body["message"])

    def test_update_conflict_and_patches(self):
        ns = make_namespace("updates")
        v1 = api()
        pod = v1.create_namespaced_pod(ns, pod_body(name="p", labels={"a": "1"}))
        stale = pod.metadata.resource_version
        pod.metadata.labels["b"] = "2"
        fresh = v1.replace_namespaced_pod("p", ns, pod)
        self.assertNotEqual(fresh.metadata.resource_version, stale)
        pod.metadata.resource_version = stale
        with self.assertRaises(ApiException) as e:
            v1.replace_namespaced_pod("p", ns, pod)
        self.assertEqual((e.exception.status, json.loads(e.exception.body)["reason"]), (409, "Conflict"))
        self.assertIn("the object has been modified", json.loads(e.exception.body)["message"])
        code, _, body = raw("PATCH", "/api/v1/namespaces/%s/pods/p" % ns, {"metadata": {"labels": {"a": None, "c": "3"}}},
                            content_type="application/merge-patch+json")
        self.assertEqual(code, 200)
        self.assertEqual(body["metadata"]["labels"], {"b": "2", "c": "3"})
        code, _, body = raw("PATCH", "/api/v1/namespaces/%s/pods/p" % ns,
                            {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}},
                            content_type="application/strategic-merge-patch+json")
        self.assertEqual(code, 200, body)
        self.assertEqual(body["spec"]["containers"][0]["image"], "busybox:1.37")
        self.assertEqual(body["spec"]["containers"][0]["terminationMessagePath"], "/dev/termination-log")
        code, _, body = raw("PATCH", "/api/v1/namespaces/%s/pods/p" % ns,
                            [{"op": "add", "path": "/metadata/annotations/x", "value": "y"},
                             {"op": "test", "path": "/metadata/labels/b", "value": "2"}],
                            content_type="application/json-patch+json")
        self.assertEqual((code, body["metadata"]["annotations"]["x"]), (200, "y"))
        code, _, body = raw("PATCH", "/api/v1/namespaces/%s/pods/p" % ns, {"metadata": {"resourceVersion": stale, "labels": {"d": "4"}}},
                            content_type="application/merge-patch+json")
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        code, _, body = raw("PATCH", "/api/v1/namespaces/%s/pods/p" % ns, {"metadata": {}}, content_type="application/apply-patch+yaml")
        self.assertEqual(code, 415)

    def test_auth(self):
        code, _, body = raw("GET", "/api/v1/namespaces", cert=False)
        self.assertEqual((code, body["reason"]), (401, "Unauthorized"))
        code, _, body = raw("GET", "/api/v1/namespaces", cert=False, token="wrong")
        self.assertEqual(code, 401)
        code, _, body = raw("GET", "/api/v1/namespaces", cert=False, token=FAKE_STATE["token"])
        self.assertEqual(code, 200)
        code, _, body = raw("GET", "/api/v1/namespaces", cert=False, token=FAKE_STATE["viewerToken"])
        self.assertEqual(code, 200)
        code, _, body = raw("POST", "/api/v1/namespaces", {"metadata": {"name": "viewer-made"}}, cert=False,
                            token=FAKE_STATE["viewerToken"])
        self.assertEqual((code, body["reason"]), (403, "Forbidden"))
        self.assertIn('User "viewer" cannot create resource "namespaces"', body["message"])
        for context in ("fake", "fake-token", "fake-tokenfile"):
            self.assertIn("default", [n.metadata.name for n in api(context).list_namespace().items], context)
        bad = client.Configuration()
        bad.host = FAKE_STATE["url"]
        bad.ssl_ca_cert = FAKE_STATE["ca"]
        bad.api_key = {"authorization": "Bearer nope"}
        with self.assertRaises(ApiException) as e:
            client.CoreV1Api(client.ApiClient(bad)).list_namespace()
        self.assertEqual(e.exception.status, 401)
        # a client certificate from another CA does not get through the TLS handshake
        other = os.path.join(FAKE_STATE["dir"], "other")
        os.makedirs(other)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "k", "-out", "c",
                        "-days", "1", "-subj", "/CN=admin"], cwd=other, check=True, capture_output=True)
        ctx = ssl.create_default_context(cafile=FAKE_STATE["ca"])
        ctx.load_cert_chain(os.path.join(other, "c"), os.path.join(other, "k"))
        with self.assertRaises((ssl.SSLError, urllib.error.URLError, ConnectionResetError)):
            urllib.request.urlopen(FAKE_STATE["url"] + "/api/v1/namespaces", context=ctx, timeout=10).read()


    def test_events_deletecollection_and_namespace_delete(self):
        ns = make_namespace("collections")
        v1 = api()
        event = {"metadata": {"generateName": "ev-"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
                 "reason": "Scheduled", "message": "bound to node-1", "type": "Normal", "source": {"component": "tessera"}}
        made = v1.create_namespaced_event(ns, event)
        self.assertEqual(v1.read_namespaced_event(made.metadata.name, ns).reason, "Scheduled")
        self.assertEqual(len(v1.list_namespaced_event(ns, field_selector="source=tessera,reason=Scheduled").items), 1)
        code, _, body = raw("POST", "/api/v1/namespaces/%s/events" % ns,
                            dict(event, involvedObject={"kind": "Pod", "name": "p", "namespace": "elsewhere"}))
        self.assertEqual(code, 422)
        for i in range(3):
            v1.create_namespaced_pod(ns, pod_body(name="c%d" % i, labels={"drop": "yes" if i < 2 else "no"}))
        v1.delete_collection_namespaced_pod(ns, label_selector="drop=yes")
        self.assertEqual([p.metadata.name for p in v1.list_namespaced_pod(ns).items], ["c2"])
        gone = v1.delete_namespace(ns)
        wait_for(lambda: phase_namespace(ns) is None, what="namespace and its content deleted")
        code, _, body = raw("GET", "/api/v1/namespaces/%s/pods/c2" % ns)
        self.assertEqual(code, 404)


def phase_namespace(name):
    try:
        return api().read_namespace(name).status.phase
    except ApiException:
        return None


class Selectors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ns = make_namespace("selectors")
        v1 = api()
        specs = [("a", {"tier": "web", "env": "prod"}, None), ("b", {"tier": "db", "env": "prod"}, "tessera"),
                 ("c", {"tier": "web"}, "tessera"), ("d", {}, None)]
        for name, labels, scheduler in specs:
            v1.create_namespaced_pod(cls.ns, pod_body(name=name, labels=labels, scheduler=scheduler))
        v1.patch_namespaced_pod_status("d", cls.ns, {"status": {"phase": "Running"}})

    def names(self, label="", field=""):
        return sorted(p.metadata.name for p in api().list_namespaced_pod(self.ns, label_selector=label, field_selector=field).items)

    def test_label_selectors(self):
        self.assertEqual(self.names("tier=web"), ["a", "c"])
        self.assertEqual(self.names("tier==web,env=prod"), ["a"])
        self.assertEqual(self.names("tier!=web"), ["b", "d"])
        self.assertEqual(self.names("tier in (db, web)"), ["a", "b", "c"])
        self.assertEqual(self.names("tier notin (web)"), ["b", "d"])
        self.assertEqual(self.names("env"), ["a", "b"])
        self.assertEqual(self.names("!env"), ["c", "d"])
        code, _, body = raw("GET", "/api/v1/namespaces/%s/pods?labelSelector=tier%%20in%%20web" % self.ns)
        self.assertEqual((code, body["reason"]), (400, "BadRequest"))

    def test_field_selectors(self):
        self.assertEqual(self.names(field="metadata.name=b"), ["b"])
        self.assertEqual(self.names(field="spec.schedulerName=tessera"), ["b", "c"])
        self.assertEqual(self.names(field="spec.schedulerName=tessera,metadata.name!=b"), ["c"])
        self.assertEqual(self.names(field="status.phase=Running"), ["d"])
        self.assertEqual(self.names(field="spec.nodeName="), ["a", "b", "c", "d"])
        self.assertEqual(self.names(field="metadata.namespace=%s" % self.ns, label="tier=db"), ["b"])
        code, _, body = raw("GET", "/api/v1/namespaces/%s/pods?fieldSelector=spec.image%%3Dx" % self.ns)
        self.assertEqual(code, 400)
        self.assertIn("field label not supported: spec.image", body["message"])


class Paging(unittest.TestCase):
    def test_limit_continue_and_expired_token(self):
        ns = make_namespace("paging")
        v1 = api()
        for i in range(7):
            v1.create_namespaced_pod(ns, pod_body(name="p%d" % i, labels={"odd": str(i % 2)}))
        first = v1.list_namespaced_pod(ns, limit=3)
        self.assertEqual(len(first.items), 3)
        self.assertEqual(first.metadata.remaining_item_count, 4)
        seen = [p.metadata.name for p in first.items]
        token = first.metadata._continue
        v1.create_namespaced_pod(ns, pod_body(name="p9"))  # after the first page: not in this list
        while token:
            page = v1.list_namespaced_pod(ns, limit=3, _continue=token)
            self.assertEqual(page.metadata.resource_version, first.metadata.resource_version)
            seen += [p.metadata.name for p in page.items]
            token = page.metadata._continue
        self.assertEqual(seen, ["p%d" % i for i in range(7)])
        odd = v1.list_namespaced_pod(ns, limit=2, label_selector="odd=1")
        self.assertEqual([p.metadata.name for p in odd.items], ["p1", "p3"])
        rest = v1.list_namespaced_pod(ns, limit=2, label_selector="odd=1", _continue=odd.metadata._continue)
        self.assertEqual([p.metadata.name for p in rest.items], ["p5"])
        stale = v1.list_namespaced_pod(ns, limit=2).metadata._continue
        v1.create_namespaced_pod(ns, pod_body(name="p10"))
        raw("POST", "/fake/compact")
        with self.assertRaises(ApiException) as e:
            v1.list_namespaced_pod(ns, limit=2, _continue=stale)
        self.assertEqual((e.exception.status, json.loads(e.exception.body)["reason"]), (410, "Expired"))
        code, _, body = raw("GET", "/api/v1/namespaces/%s/pods?limit=2&continue=garbage" % ns)
        self.assertEqual(code, 400)


class Watches(unittest.TestCase):
    def test_events_in_order_and_replay(self):
        ns = make_namespace("watch-order")
        v1 = api()
        start = v1.list_namespaced_pod(ns).metadata.resource_version
        w = watch.Watch()
        got = []

        def run():
            for ev in w.stream(v1.list_namespaced_pod, ns, resource_version=start, timeout_seconds=5):
                got.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version,
                            ev["object"].metadata.labels))
                if ev["type"] == "DELETED":
                    w.stop()
        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.3)
        v1.create_namespaced_pod(ns, pod_body(name="w"))
        v1.patch_namespaced_pod("w", ns, {"metadata": {"labels": {"step": "2"}}})
        v1.delete_namespaced_pod("w", ns)  # unbound: deleted at once whatever the grace
        t.join(10)
        self.assertEqual([g[0] for g in got], ["ADDED", "MODIFIED", "DELETED"])
        rvs = [int(g[2]) for g in got]
        self.assertEqual(rvs, sorted(rvs))
        self.assertEqual(got[1][3], {"step": "2"})
        # replay: the same events again from the same revision
        replay = RawWatch("/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s&timeoutSeconds=2" % (ns, start))
        replay.ended.wait(5)
        self.assertEqual([(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in replay.events],
                         [(g[0], g[2]) for g in got])

    def test_initial_added_selectors_and_timeout(self):
        ns = make_namespace("watch-select")
        v1 = api()
        v1.create_namespaced_pod(ns, pod_body(name="in", labels={"team": "a"}))
        v1.create_namespaced_pod(ns, pod_body(name="out", labels={"team": "b"}))
        began = time.time()
        w = RawWatch("/api/v1/namespaces/%s/pods?watch=true&labelSelector=team%%3Da&timeoutSeconds=2" % ns)
        w.wait(typed("ADDED", "in"))
        v1.patch_namespaced_pod("in", ns, {"metadata": {"labels": {"team": "b"}}})
        w.wait(typed("DELETED", "in"))
        v1.patch_namespaced_pod("out", ns, {"metadata": {"labels": {"team": "a"}}})
        w.wait(typed("ADDED", "out"))
        self.assertTrue(w.ended.wait(5))
        self.assertGreater(time.time() - began, 1.5)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in w.events],
                         [("ADDED", "in"), ("DELETED", "in"), ("ADDED", "out")])

    def test_bookmarks(self):
        ns = make_namespace("watch-bookmarks")
        v1 = api()
        rv = v1.list_namespaced_pod(ns).metadata.resource_version
        w = RawWatch("/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=4" % (ns, rv))
        created = v1.create_namespaced_pod(ns, pod_body(name="b"))
        mark = w.wait(lambda e: e["type"] == "BOOKMARK" and int(e["object"]["metadata"]["resourceVersion"]) >= int(created.metadata.resource_version), 4)
        self.assertEqual(mark["object"]["kind"], "Pod")
        plain = RawWatch("/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s&timeoutSeconds=2" % (ns, rv))
        plain.ended.wait(5)
        self.assertNotIn("BOOKMARK", [e["type"] for e in plain.events])

    def test_410_at_start_and_mid_stream(self):
        ns = make_namespace("watch-expired")
        v1 = api()
        old = v1.list_namespaced_pod(ns).metadata.resource_version
        v1.create_namespaced_pod(ns, pod_body(name="x"))
        running = RawWatch("/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s&timeoutSeconds=30" % (ns, old))
        running.wait(typed("ADDED", "x"))
        code, _, body = raw("POST", "/fake/compact")
        self.assertEqual(code, 200)
        self.assertGreaterEqual(body["watchesExpired"], 1)
        error = running.wait(lambda e: e["type"] == "ERROR", 5)
        self.assertEqual((error["object"]["kind"], error["object"]["code"], error["object"]["reason"]), ("Status", 410, "Expired"))
        self.assertTrue(running.ended.wait(5))
        start = RawWatch("/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s" % (ns, old))
        self.assertEqual((start.status, start.error["reason"], start.error["code"]), (410, "Expired", 410))
        self.assertIn("too old resource version", start.error["message"])
        with self.assertRaises(ApiException) as e:
            for _ in watch.Watch().stream(v1.list_namespaced_pod, ns, resource_version=old, timeout_seconds=2):
                pass
        self.assertEqual(e.exception.status, 410)
        # a fresh list gives a revision to watch from again
        fresh = v1.list_namespaced_pod(ns).metadata.resource_version
        again = RawWatch("/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s&timeoutSeconds=1" % (ns, fresh))
        self.assertEqual(again.status, 200)


class PodLifecycle(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ns = make_namespace("lifecycle")
        make_node("node-ready")
        make_node("node-down", ready=False)

    def test_node_keeps_capacity_and_gets_ready(self):
        node = api().read_node("node-ready")
        self.assertEqual(node.status.allocatable["nvidia.com/gpu"], "8")
        self.assertEqual(node.status.capacity["nvidia.com/mig-1g.10gb"], "7")
        wait_for(lambda: any(c.type == "Ready" and c.status == "True" for c in api().read_node("node-ready").status.conditions or []),
                 what="kubelet posts Ready")
        self.assertEqual([c.status for c in api().read_node("node-down").status.conditions if c.type == "Ready"], ["False"])

    def test_binding_runs_and_finishes(self):
        v1, ns = api(), self.ns
        v1.create_namespaced_pod(ns, pod_body(name="ok", scheduler="tessera", gpus=1,
                                              annotations={"fake.tessera.io/run-seconds": "1"}))
        v1.create_namespaced_pod(ns, pod_body(name="fails", scheduler="tessera",
                                              annotations={"fake.tessera.io/run-seconds": "1", "fake.tessera.io/exit-code": "3"}))
        code, _, body = raw("POST", "/api/v1/namespaces/%s/pods/ok/binding" % ns,
                            {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "ok"}, "target": {"kind": "Node", "name": "node-ready"}})
        self.assertEqual((code, body["status"]), (201, "Success"))
        code, _, body = raw("POST", "/api/v1/namespaces/%s/bindings" % ns,
                            {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "fails"}, "target": {"kind": "Node", "name": "node-ready"}})
        self.assertEqual(code, 201)
        code, _, body = raw("POST", "/api/v1/namespaces/%s/pods/ok/binding" % ns,
                            {"metadata": {"name": "ok"}, "target": {"name": "node-down"}})
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.assertIn('already assigned to node "node-ready"', body["message"])
        self.assertEqual(v1.read_namespaced_pod("ok", ns).spec.node_name, "node-ready")
        running = wait_for(lambda: (lambda p: p if p.status.phase == "Running" else None)(v1.read_namespaced_pod("ok", ns)),
                           what="ok Running")
        cs = running.status.container_statuses[0]
        self.assertTrue(cs.started and cs.ready)
        self.assertIsNotNone(cs.state.running.started_at)
        self.assertTrue(running.status.pod_ip)
        wait_for(lambda: phase(ns, "ok") == "Succeeded", what="ok Succeeded")
        wait_for(lambda: phase(ns, "fails") == "Failed", what="fails Failed: %s" % v1.read_namespaced_pod("fails", ns).status)
        failed = v1.read_namespaced_pod("fails", ns)
        self.assertEqual(failed.status.container_statuses[0].state.terminated.exit_code, 3)
        self.assertEqual(failed.status.container_statuses[0].state.terminated.reason, "Error")
        self.assertEqual(v1.read_namespaced_pod("ok", ns).status.container_statuses[0].state.terminated.exit_code, 0)

    def test_binding_checks_preconditions_then_copies_annotations(self):
        v1, ns = api(), self.ns
        made = v1.create_namespaced_pod(ns, pod_body(name="annotated", scheduler="tessera"))
        uid, rv = made.metadata.uid, made.metadata.resource_version
        path = "/api/v1/namespaces/%s/pods/annotated/binding" % ns
        binding = lambda **meta: {"metadata": dict({"name": "annotated"}, **meta), "target": {"kind": "Node", "name": "node-ready"}}
        # A uid or resourceVersion that is not the pod's: 409, and nothing written.
        code, _, body = raw("POST", path, binding(uid="not-its-uid", annotations={"a": "1"}))
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.assertIn("UID in precondition", body["message"])
        code, _, body = raw("POST", path, binding(uid=uid, resourceVersion=str(int(rv) - 1)))
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.assertIn("ResourceVersion in precondition", body["message"])
        pod = v1.read_namespaced_pod("annotated", ns)
        self.assertIsNone(pod.spec.node_name)
        self.assertNotIn("a", pod.metadata.annotations or {})
        # The right uid: bound, the Binding's annotations on the pod, its labels not.
        code, _, body = raw("POST", path, binding(uid=uid, resourceVersion=rv, annotations={"tessera.io/job": "7"},
                                                  labels={"not": "copied"}))
        self.assertEqual(code, 201)
        pod = v1.read_namespaced_pod("annotated", ns)
        self.assertEqual(pod.spec.node_name, "node-ready")
        self.assertEqual(pod.metadata.annotations["tessera.io/job"], "7")
        self.assertNotIn("not", pod.metadata.labels or {})
        self.assertEqual([c.status for c in pod.status.conditions if c.type == "PodScheduled"], ["True"])
        # A pod with scheduling gates is not bound.
        gated = pod_body(name="gated", scheduler="tessera")
        gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
        v1.create_namespaced_pod(ns, gated)
        code, _, body = raw("POST", "/api/v1/namespaces/%s/pods/gated/binding" % ns,
                            {"metadata": {"name": "gated"}, "target": {"name": "node-ready"}})
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.assertIn("schedulingGates", body["message"])

    def test_not_ready_node_keeps_pods(self):
        v1, ns = api(), self.ns
        v1.create_namespaced_pod(ns, pod_body(name="stuck", node="node-down"))
        time.sleep(1)
        self.assertEqual(phase(ns, "stuck"), "Pending")
        v1.create_namespaced_pod(ns, pod_body(name="frozen", node="node-ready"))
        wait_for(lambda: phase(ns, "frozen") == "Running", what="frozen Running")
        make_node("flaky")
        v1.create_namespaced_pod(ns, pod_body(name="flaky-pod", node="flaky", annotations={"fake.tessera.io/run-seconds": "1"}))
        wait_for(lambda: phase(ns, "flaky-pod") == "Running", what="flaky-pod Running")
        v1.patch_node_status("flaky", {"status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]}})
        time.sleep(2)
        self.assertEqual(phase(ns, "flaky-pod"), "Running")  # nothing moves it while its node is NotReady
        v1.patch_node_status("flaky", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        wait_for(lambda: phase(ns, "flaky-pod") == "Succeeded", what="flaky-pod finishes once its node is back")

    def test_graceful_delete(self):
        v1, ns = api(), self.ns
        v1.create_namespaced_pod(ns, pod_body(name="graceful", node="node-ready", annotations={"fake.tessera.io/terminate-seconds": "1"}))
        wait_for(lambda: phase(ns, "graceful") == "Running", what="graceful Running")
        rv = v1.read_namespaced_pod("graceful", ns).metadata.resource_version
        w = RawWatch("/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s&fieldSelector=metadata.name%%3Dgraceful&timeoutSeconds=10" % (ns, rv))
        deleted = v1.delete_namespaced_pod("graceful", ns, grace_period_seconds=5)
        self.assertIsNotNone(deleted.metadata.deletion_timestamp)
        self.assertEqual(deleted.metadata.deletion_grace_period_seconds, 5)
        mod = w.wait(lambda e: e["type"] == "MODIFIED" and e["object"]["metadata"].get("deletionTimestamp"))
        self.assertEqual(mod["object"]["metadata"]["deletionGracePeriodSeconds"], 5)
        began = time.time()
        last = w.wait(typed("DELETED", "graceful"), 5)
        self.assertLess(time.time() - began, 4)  # the kubelet stopped it after 1 s, not at the end of the grace
        self.assertEqual(last["object"]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 143)
        # grace 0 deletes at once; a pod on a NotReady node goes when its grace runs out
        v1.create_namespaced_pod(ns, pod_body(name="now", node="node-ready"))
        v1.delete_namespaced_pod("now", ns, grace_period_seconds=0)
        self.assertEqual(phase(ns, "now"), "gone")
        v1.create_namespaced_pod(ns, pod_body(name="orphaned", node="node-down"))
        v1.delete_namespaced_pod("orphaned", ns, grace_period_seconds=1)
        self.assertEqual(phase(ns, "orphaned"), "Pending")
        wait_for(lambda: phase(ns, "orphaned") == "gone", 5, "grace runs out")

    def test_eviction_and_oom(self):
        v1, ns = api(), self.ns
        v1.create_namespaced_pod(ns, pod_body(name="evictee", node="node-ready"))
        wait_for(lambda: phase(ns, "evictee") == "Running", what="evictee Running")
        code, _, body = raw("POST", "/fake/evict?namespace=%s&name=evictee" % ns)
        self.assertEqual(code, 200, body)
        pod = v1.read_namespaced_pod("evictee", ns)
        self.assertEqual((pod.status.phase, pod.status.reason), ("Failed", "Evicted"))
        self.assertIn("DisruptionTarget", [c.type for c in pod.status.conditions])
        v1.create_namespaced_pod(ns, pod_body(name="oom", node="node-ready", annotations={
            "fake.tessera.io/run-seconds": "0.5", "fake.tessera.io/oom-killed": "true"}))
        wait_for(lambda: phase(ns, "oom") == "Failed", what="oom Failed")
        term = v1.read_namespaced_pod("oom", ns).status.container_statuses[0].state.terminated
        self.assertEqual((term.reason, term.exit_code), ("OOMKilled", 137))

    def test_restart_policy_always_restarts(self):
        v1, ns = api(), self.ns
        v1.create_namespaced_pod(ns, pod_body(name="looping", node="node-ready", restart="Always", annotations={
            "fake.tessera.io/run-seconds": "0.3", "fake.tessera.io/exit-code": "1"}))
        pod = wait_for(lambda: (lambda p: p if (p.status.container_statuses or [None])[0] and
                                p.status.container_statuses[0].restart_count >= 2 else None)(v1.read_namespaced_pod("looping", ns)),
                       what="restarts")
        self.assertEqual(pod.status.phase, "Running")
        self.assertEqual(pod.status.container_statuses[0].last_state.terminated.exit_code, 1)


class Jobs(unittest.TestCase):
    def test_defaults_and_orphan_delete(self):
        ns = make_namespace("jobs")
        b, v1 = batch(), api()
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
               "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x:1"}]}}}}
        made = b.create_namespaced_job(ns, job)
        self.assertEqual(made.spec.backoff_limit, 6)
        self.assertEqual(made.spec.template.metadata.labels["job-name"], "train")
        owner = [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": made.metadata.uid, "controller": True}]
        for name in ("train-a", "train-b"):
            body = pod_body(name=name)
            body["metadata"]["ownerReferences"] = owner
            v1.create_namespaced_pod(ns, body)
        code, headers, _ = raw("DELETE", "/apis/batch/v1/namespaces/%s/jobs/train" % ns)
        self.assertEqual(code, 200)
        self.assertIn("child pods are preserved", headers.get("Warning", ""))
        self.assertEqual(len(v1.list_namespaced_pod(ns).items), 2)  # Orphan: pods kept
        made = b.create_namespaced_job(ns, job)
        for pod in v1.list_namespaced_pod(ns).items:
            v1.patch_namespaced_pod(pod.metadata.name, ns, {"metadata": {"ownerReferences": [dict(owner[0], uid=made.metadata.uid)]}})
        b.delete_namespaced_job("train", ns, propagation_policy="Background")
        wait_for(lambda: not v1.list_namespaced_pod(ns).items, what="owned pods collected")
        bad = json.loads(json.dumps(job))
        bad["spec"]["template"]["spec"]["restartPolicy"] = "Always"
        with self.assertRaises(ApiException) as e:
            b.create_namespaced_job(ns, bad)
        self.assertEqual(e.exception.status, 422)


class Kubectl(unittest.TestCase):
    def test_discovery(self):
        version = json.loads(kubectl("version", "-o", "json").stdout)
        self.assertEqual(version["serverVersion"]["major"], "1")
        resources = kubectl("api-resources").stdout
        for name in ("pods", "nodes", "namespaces", "events", "jobs"):
            self.assertIn(name, resources)

    def test_apply_get_label_delete(self):
        kubectl("create", "namespace", "kubectl")
        manifest = """apiVersion: v1
kind: Pod
metadata:
  name: applied
  namespace: kubectl
  labels: {app: demo}
spec:
  schedulerName: tessera
  containers:
  - name: main
    image: busybox:1.36
    resources: {limits: {nvidia.com/gpu: "1"}}
"""
        self.assertIn("pod/applied created", kubectl("apply", "-f", "-", input=manifest).stdout)
        self.assertIn("unchanged", kubectl("apply", "-f", "-", input=manifest).stdout)
        changed = manifest.replace("busybox:1.36", "busybox:1.37").replace("{app: demo}", "{app: demo, v: \"2\"}")
        self.assertIn("configured", kubectl("apply", "-f", "-", input=changed).stdout)
        pod = json.loads(kubectl("get", "pod", "applied", "-n", "kubectl", "-o", "json").stdout)
        self.assertEqual(pod["spec"]["containers"][0]["image"], "busybox:1.37")
        self.assertEqual(pod["metadata"]["labels"], {"app": "demo", "v": "2"})
        kubectl("label", "pod", "applied", "-n", "kubectl", "team=a")
        kubectl("annotate", "pod", "applied", "-n", "kubectl", "note=x")
        listed = kubectl("get", "pods", "-n", "kubectl", "-l", "team=a", "--field-selector", "spec.schedulerName=tessera").stdout
        self.assertIn("applied", listed)
        self.assertIn("Pending", listed)
        missing = kubectl("get", "pod", "nope", "-n", "kubectl", check=False)
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn('pods "nope" not found', missing.stderr)
        self.assertIn('pod "applied" deleted', kubectl("delete", "pod", "applied", "-n", "kubectl").stdout)
        for context in ("fake-token", "fake-tokenfile"):
            self.assertIn("default", kubectl("get", "namespaces", context=context).stdout)

    def test_get_pods_watch_prints_as_it_happens(self):
        kubectl("create", "namespace", "kubectl-watch")
        make_node("kubectl-node") if phase_node("kubectl-node") is None else None
        proc = subprocess.Popen(["kubectl", "--kubeconfig", FAKE_STATE["kubeconfig"], "get", "pods", "-n", "kubectl-watch", "-w"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []

        def read():
            for line in proc.stdout:
                lines.append((time.time(), line.rstrip()))
        threading.Thread(target=read, daemon=True).start()
        try:
            time.sleep(1.0)
            created = time.time()
            api().create_namespaced_pod("kubectl-watch", pod_body(name="watched", node="kubectl-node",
                                                                 annotations={"fake.tessera.io/run-seconds": "1"}))
            wait_for(lambda: any("watched" in l and "Running" in l for _, l in lines), what="kubectl prints Running")
            wait_for(lambda: any("watched" in l and "Completed" in l for _, l in lines), what="kubectl prints Completed")
            first = next(t for t, l in lines if "watched" in l)
            self.assertLess(first - created, 2.0)
            self.assertIsNone(proc.poll())  # still watching: the lines came as the pod changed
        finally:
            proc.terminate()
            proc.wait(5)


def phase_node(name):
    try:
        return api().read_node(name)
    except ApiException:
        return None


if __name__ == "__main__":
    unittest.main(verbosity=2 if "-v" in sys.argv else 1)
