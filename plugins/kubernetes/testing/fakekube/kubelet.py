"""A kubelet stand-in: runs the pods bound to Ready nodes, through the API like a kubelet does.

It watches pods and nodes in etcd and, for a pod whose spec.nodeName names a node that exists
and whose Ready condition is True, writes what a kubelet would write:
- Pending -> Running after `fake.tessera.io/start-seconds` (default 0): conditions Initialized,
  ContainersReady, Ready and PodScheduled True, hostIP, podIP (10.244.0.0/16, one per pod),
  startTime, containerStatuses with `started: true`, `ready: true`, state.running.startedAt.
- Running -> terminated after `fake.tessera.io/run-seconds` (absent: runs until deleted), with
  exit code `fake.tessera.io/exit-code` (default 0) or, with `fake.tessera.io/oom-killed: "true"`,
  exit code 137 and reason OOMKilled. With restartPolicy Never (or OnFailure and exit code 0)
  the pod ends Succeeded (all containers exited 0) or Failed, containerStatuses[].state.terminated
  holding exitCode, reason (Completed, Error, OOMKilled), startedAt and finishedAt; with Always
  (or OnFailure and a non-zero code) the containers restart: restartCount + 1, lastState holds
  the terminated state, and they run again for run-seconds (no CrashLoopBackOff delay).
- Graceful delete (deletionTimestamp set): the containers get SIGTERM and stop after
  `fake.tessera.io/terminate-seconds` (default 0); if that is within the grace period they exit
  143, else they are killed at its end with 137. The pod's phase becomes Failed (Succeeded if all
  exited 0), then the kubelet deletes it with grace 0 (uid precondition): DELETED.
- Eviction on request (Kubelet.evict, /fake/evict): phase Failed, reason Evicted, the message,
  a DisruptionTarget condition (reason TerminationByKubelet), containers terminated with 137;
  the pod object stays, as with a real kubelet eviction.
- A node without a Ready condition gets Ready=True (what a kubelet posts when it registers).
A node set NotReady (Ready False or Unknown) or deleted freezes its pods as they are: nothing
moves them. The real node lifecycle controller would mark them Ready=False and evict them after
tolerationSeconds (300 s), and pod GC would delete pods of a deleted node; the fake does neither,
tests that need it delete or evict the pods. The grace reaper (on unless --no-grace-reaper)
deletes any pod whose deletionTimestamp has passed, on any node or none, so a graceful delete
always ends in DELETED; a real cluster leaves such a pod until its kubelet or pod GC acts.
All annotation times are seconds (float). Thread safety: one thread plans, a small pool writes;
writes go through Registry.guaranteed_update, which re-checks state, so a stale plan writes nothing.
"""

import heapq
import hashlib
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import errors
from .errors import ApiError
from .etcd_store import prefix_end
from .registry import decode, now_rfc3339, parse_rfc3339
from .resources import NODES, PODS

ANNOTATION = "fake.tessera.io/"
_POD_PREFIX = b"/registry/pods/"
_NODE_PREFIX = b"/registry/nodes/"


def _annotation(pod, name, default=None, kind=float):
    value = (pod["metadata"].get("annotations") or {}).get(ANNOTATION + name)
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError:
        return default


def _ts(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _node_ready(node):
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return None


class Kubelet:
    def __init__(self, registry, enabled=True, grace_reaper=True, workers=4):
        self.registry = registry
        self.enabled = enabled
        self.grace_reaper = grace_reaper
        self._pods = {}
        self._nodes = {}
        self._timers = []
        self._inflight = set()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kubelet")
        self._started_at = {}
        self._next_ip = 0
        self._stats = {"started": 0, "finished": 0, "restarted": 0, "terminated": 0, "deleted": 0, "evicted": 0,
                       "nodes_readied": 0}
        self._stop = threading.Event()
        self._thread = None

    def stats(self):
        with self._lock:
            return dict(self._stats, enabled=self.enabled, grace_reaper=self.grace_reaper)

    def start(self):
        if not self.enabled and not self.grace_reaper:
            return
        etcd = self.registry.etcd
        revision = 0
        for prefix, table in ((_NODE_PREFIX, self._nodes), (_POD_PREFIX, self._pods)):
            kvs, _, header = etcd.range(prefix, prefix_end(prefix), revision=revision)
            revision = revision or header
            for kv in kvs:
                table[kv.key] = decode(kv)
        self._watch = etcd.watch(b"/registry/", revision + 1)
        for key in list(self._nodes):
            self._watch.events.put(("node", key))
        for key in list(self._pods):
            self._watch.events.put(("replan", key, None))
        self._thread = threading.Thread(target=self._loop, name="kubelet", daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread:
            self._watch.cancel()

    # ---- the planning loop ------------------------------------------------------------------

    def _loop(self):
        while not self._stop.is_set():
            timeout = 0.5
            if self._timers:
                timeout = max(0.0, min(timeout, self._timers[0][0] - time.time()))
            try:
                item = self._watch.events.get(timeout=timeout)
            except queue.Empty:
                item = None
            if item is not None and item[0] == "replan":
                pod = self._pods.get(item[1])
                if pod is not None and pod["metadata"]["resourceVersion"] != item[2]:
                    self._plan(item[1])
            elif item is not None and item[0] == "node":
                if item[1] in self._nodes:
                    self._node_changed(self._nodes[item[1]])
            elif item is not None:
                if item[0] != "events":
                    if item[0] == "compacted":  # cannot happen while we keep up; start over
                        self._pods.clear()
                        self._nodes.clear()
                        self.start()
                    return
                for ev in item[2]:
                    self._apply(ev)
            now = time.time()
            while self._timers and self._timers[0][0] <= now:
                _, key = heapq.heappop(self._timers)
                self._plan(key)

    def _apply(self, ev):
        key = ev.kv.key
        if key.startswith(_POD_PREFIX):
            if ev.type == 1:
                pod = self._pods.pop(key, None)
                if pod:
                    self._started_at.pop(pod["metadata"].get("uid"), None)
            else:
                self._pods[key] = decode(ev.kv)
                self._plan(key)
        elif key.startswith(_NODE_PREFIX):
            name = key[len(_NODE_PREFIX):].decode()
            if ev.type == 1:
                self._nodes.pop(key, None)
            else:
                self._nodes[key] = decode(ev.kv)
                self._node_changed(self._nodes[key])
            for pkey, pod in list(self._pods.items()):
                if (pod.get("spec") or {}).get("nodeName") == name:
                    self._plan(pkey)

    def _node_changed(self, node):
        if self.enabled and _node_ready(node) is None:
            self._submit(b"node:" + node["metadata"]["name"].encode(), self._ready_node, node["metadata"]["name"])

    def _ready(self, node_name):
        node = self._nodes.get(_NODE_PREFIX + node_name.encode())
        return node is not None and _node_ready(node) is True

    def _plan(self, key):
        pod = self._pods.get(key)
        if pod is None:
            return
        now = time.time()
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        node = spec.get("nodeName")
        phase = status.get("phase")
        on_ready_node = self.enabled and bool(node) and self._ready(node)
        if meta.get("deletionTimestamp"):
            if meta.get("finalizers") and meta.get("deletionGracePeriodSeconds") == 0:
                return  # waits for whoever owns the finalizers
            deadline = parse_rfc3339(meta["deletionTimestamp"])
            if on_ready_node:
                grace = meta.get("deletionGracePeriodSeconds") or 0
                if phase in ("Succeeded", "Failed", "Pending") or phase is None:
                    return self._at(key, now, self._remove, pod)
                stop_after = _annotation(pod, "terminate-seconds", 0.0)
                requested = deadline - grace
                return self._at(key, requested + min(stop_after, grace), self._terminate, pod, stop_after < grace)
            if self.grace_reaper:
                return self._at(key, deadline, self._remove, pod)
            return
        if not on_ready_node:
            return
        if phase == "Pending":
            scheduled = next((c.get("lastTransitionTime") for c in status.get("conditions") or []
                              if c.get("type") == "PodScheduled"), None) or meta.get("creationTimestamp")
            begin = parse_rfc3339(scheduled) if scheduled else now
            return self._at(key, begin + _annotation(pod, "start-seconds", 0.0), self._start, pod)
        if phase == "Running":
            run = _annotation(pod, "run-seconds")
            if run is None:
                return
            started = self._started_at.get((meta.get("uid"), self._restarts(pod)))
            if started is None:
                started = self._container_started(pod) or now
            return self._at(key, started + run, self._finish, pod)

    def _at(self, key, when, action, pod, *args):
        if when > time.time() + 0.001:
            heapq.heappush(self._timers, (when, key))
            return
        self._submit(key, action, pod, *args)

    def _submit(self, key, action, *args):
        with self._lock:
            if key in self._inflight:
                return
            self._inflight.add(key)
        planned = (self._pods.get(key) or {}).get("metadata", {}).get("resourceVersion")

        def run():
            try:
                action(*args)
            except ApiError as e:
                if e.code not in (404, 409):
                    print("fake kubelet: %s: %s" % (action.__name__, e.message), flush=True)
            except Exception as e:  # keep the kubelet alive; say what went wrong
                print("fake kubelet: %s failed: %r" % (action.__name__, e), flush=True)
            finally:
                with self._lock:
                    self._inflight.discard(key)
                # re-plan from the latest state once the write is done (a change seen while it
                # was in flight was not planned again)
                if not key.startswith(b"node:"):
                    self._watch.events.put(("replan", key, planned))

        self._pool.submit(run)

    # ---- what a kubelet writes --------------------------------------------------------------

    @staticmethod
    def _restarts(pod):
        return max([c.get("restartCount", 0) for c in (pod.get("status") or {}).get("containerStatuses") or []] or [0])

    @staticmethod
    def _container_started(pod):
        for c in (pod.get("status") or {}).get("containerStatuses") or []:
            started = ((c.get("state") or {}).get("running") or {}).get("startedAt")
            if started:
                return parse_rfc3339(started)
        return None

    def _update(self, pod, mutate):
        uid = pod["metadata"]["uid"]

        def guarded(current):
            if current["metadata"].get("uid") != uid:
                return None
            return mutate(current)
        meta = pod["metadata"]
        return self.registry.guaranteed_update(PODS, meta["namespace"], meta["name"], guarded, internal=True)

    def _ready_node(self, name):
        def post(node):
            status = node.setdefault("status", {})
            conditions = status.setdefault("conditions", [])
            if any(c.get("type") == "Ready" for c in conditions):
                return None
            stamp = now_rfc3339()
            conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                               "message": "kubelet is posting ready status", "lastHeartbeatTime": stamp,
                               "lastTransitionTime": stamp})
            status.setdefault("addresses", [{"type": "InternalIP", "address": "127.0.0.1"},
                                            {"type": "Hostname", "address": name}])
            status.setdefault("nodeInfo", {
                "machineID": node["metadata"]["uid"].replace("-", ""), "systemUUID": node["metadata"]["uid"],
                "bootID": node["metadata"]["uid"], "kernelVersion": "6.1.0-fake", "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.0-fake", "kubeletVersion": "v1.32.0-fake",
                "kubeProxyVersion": "v1.32.0-fake", "operatingSystem": "linux", "architecture": "amd64"})
            return node
        self.registry.guaranteed_update(NODES, None, name, post, internal=True)
        with self._lock:
            self._stats["nodes_readied"] += 1

    def _pod_ip(self, uid):
        digest = int(hashlib.sha1(uid.encode()).hexdigest(), 16)
        return "10.244.%d.%d" % ((digest >> 8) % 256, digest % 254 + 1)

    def _host_ip(self, node_name):
        node = self._nodes.get(_NODE_PREFIX + node_name.encode()) or {}
        for a in (node.get("status") or {}).get("addresses") or []:
            if a.get("type") == "InternalIP":
                return a.get("address")
        return "127.0.0.1"

    def _start(self, pod):
        started = time.time()

        def run(p):
            status = p.setdefault("status", {})
            node = (p.get("spec") or {}).get("nodeName")
            if status.get("phase") != "Pending" or p["metadata"].get("deletionTimestamp") or not node:
                return None
            stamp = _ts(started)
            host = self._host_ip(node)
            ip = self._pod_ip(p["metadata"]["uid"])
            status.update({
                "phase": "Running", "hostIP": host, "hostIPs": [{"ip": host}], "podIP": ip, "podIPs": [{"ip": ip}],
                "startTime": stamp,
                "conditions": [
                    {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp},
                    {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp},
                    {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp},
                    {"type": "ContainersReady", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp},
                    {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": next((c.get("lastTransitionTime") for c in status.get("conditions") or []
                                                 if c.get("type") == "PodScheduled"), stamp)}],
                "containerStatuses": [self._running(c, stamp, 0, {}) for c in p["spec"].get("containers") or []],
            })
            return p
        if self._update(pod, run):
            self._started_at[(pod["metadata"]["uid"], 0)] = started
            with self._lock:
                self._stats["started"] += 1

    @staticmethod
    def _running(container, stamp, restarts, last_state):
        cid = hashlib.sha256(("%s/%s/%d" % (container.get("name"), stamp, restarts)).encode()).hexdigest()
        image = container.get("image", "")
        return {"name": container.get("name"), "state": {"running": {"startedAt": stamp}}, "lastState": last_state,
                "ready": True, "started": True, "restartCount": restarts, "image": image,
                "imageID": "%s@sha256:%s" % (image.split(":")[0], hashlib.sha256(image.encode()).hexdigest()),
                "containerID": "containerd://" + cid}

    @staticmethod
    def _terminated(status, exit_code, reason, finished):
        running = (status.get("state") or {}).get("running") or {}
        out = dict(status)
        out["state"] = {"terminated": {"exitCode": exit_code, "reason": reason,
                                       "startedAt": running.get("startedAt", finished), "finishedAt": finished,
                                       "containerID": status.get("containerID")}}
        out["ready"] = False
        out["started"] = False
        return out

    def _set_ready(self, status, value, stamp):
        for c in status.get("conditions") or []:
            if c.get("type") in ("Ready", "ContainersReady") and c.get("status") != value:
                c["status"] = value
                c["lastTransitionTime"] = stamp
                if value == "False":
                    c["reason"] = "PodCompleted" if status.get("phase") in ("Succeeded", "Failed") else "ContainersNotReady"

    def _finish(self, pod):
        oom = str((pod["metadata"].get("annotations") or {}).get(ANNOTATION + "oom-killed", "")).lower() == "true"
        code = 137 if oom else _annotation(pod, "exit-code", 0, int)
        reason = "OOMKilled" if oom else ("Completed" if code == 0 else "Error")
        finished = time.time()
        restarted = {}

        def run(p):
            status = p.get("status") or {}
            if status.get("phase") != "Running" or p["metadata"].get("deletionTimestamp"):
                return None
            stamp = _ts(finished)
            policy = p["spec"].get("restartPolicy", "Always")
            ended = [self._terminated(c, code, reason, stamp) for c in status.get("containerStatuses") or []]
            if policy == "Always" or (policy == "OnFailure" and code != 0):
                restarts = self._restarts(p) + 1
                status["containerStatuses"] = [
                    self._running({"name": c["name"], "image": c.get("image")}, stamp, restarts,
                                  {"terminated": c["state"]["terminated"]}) for c in ended]
                restarted["n"] = restarts
                return p
            status["phase"] = "Succeeded" if code == 0 else "Failed"
            status["containerStatuses"] = ended
            self._set_ready(status, "False", stamp)
            return p
        if self._update(pod, run):
            with self._lock:
                if restarted:
                    self._started_at[(pod["metadata"]["uid"], restarted["n"])] = finished
                    self._stats["restarted"] += 1
                else:
                    self._stats["finished"] += 1

    def _terminate(self, pod, in_grace):
        code = 143 if in_grace else 137
        finished = time.time()

        def run(p):
            status = p.get("status") or {}
            if status.get("phase") in ("Succeeded", "Failed"):
                return None
            stamp = _ts(finished)
            status["containerStatuses"] = [self._terminated(c, code, "Error", stamp)
                                           for c in status.get("containerStatuses") or []]
            status["phase"] = "Failed"
            self._set_ready(status, "False", stamp)
            return p
        self._update(pod, run)
        with self._lock:
            self._stats["terminated"] += 1
        self._remove(pod)

    def _remove(self, pod):
        meta = pod["metadata"]
        try:
            self.registry.delete(PODS, meta["namespace"], meta["name"],
                                 {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}})
        except ApiError as e:
            if e.code not in (404, 409):
                raise
            return
        with self._lock:
            self._stats["deleted"] += 1

    def evict(self, namespace, name, message):
        """What the kubelet does when it evicts a pod under node pressure."""
        finished = time.time()

        def run(p):
            if not (p.get("spec") or {}).get("nodeName"):
                raise errors.conflict("", "pods", name, "pod is not bound to a node; only a kubelet evicts")
            status = p.setdefault("status", {})
            if status.get("phase") in ("Succeeded", "Failed"):
                raise errors.conflict("", "pods", name, "pod has already terminated (phase %s)" % status["phase"])
            stamp = _ts(finished)
            status["phase"] = "Failed"
            status["reason"] = "Evicted"
            status["message"] = message
            status["containerStatuses"] = [self._terminated(c, 137, "Error", stamp)
                                           for c in status.get("containerStatuses") or []]
            self._set_ready(status, "False", stamp)
            conditions = status.setdefault("conditions", [])
            conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                               "message": message, "lastProbeTime": None, "lastTransitionTime": stamp})
            return p
        pod = self.registry.guaranteed_update(PODS, namespace, name, run, internal=True)
        with self._lock:
            self._stats["evicted"] += 1
        return pod
