"""Server-side printing: meta.k8s.io/v1 Table replies, which `kubectl get` asks for.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...` and prints the rows it
gets back; without them it prints only NAME and AGE. The columns here are kube-apiserver's
(pkg/printers/internalversion) for pods, nodes, namespaces, jobs and events, and NAME/AGE for
the rest; each row carries the object's metadata as PartialObjectMetadata, as by default.
"""

import time

from .registry import parse_rfc3339


def wants_table(accept):
    return "as=Table" in (accept or "") and "g=meta.k8s.io" in (accept or "")


def _age(stamp):
    if not stamp:
        return "<unknown>"
    seconds = int(time.time() - parse_rfc3339(stamp))
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return "%ds" % seconds
    minutes = seconds // 60
    if minutes < 10:
        return "%dm%ds" % (minutes, seconds % 60) if seconds % 60 else "%dm" % minutes
    if minutes < 180:
        return "%dm" % minutes
    hours = minutes // 60
    if hours < 48:
        return "%dh" % hours
    return "%dd" % (hours // 24)


def _col(name, kind="string", fmt="", priority=0):
    return {"name": name, "type": kind, "format": fmt, "description": name, "priority": priority}


def _pod_row(pod):
    spec, status, meta = pod.get("spec") or {}, pod.get("status") or {}, pod["metadata"]
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(c.get("restartCount", 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    for c in statuses:
        state = c.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated"):
            reason = state["terminated"].get("reason") or ("Signal:%d" % state["terminated"].get("signal", 0))
    if status.get("reason"):
        reason = status["reason"]
    if meta.get("deletionTimestamp"):
        reason = "Terminating"
    return [meta["name"], "%d/%d" % (ready, len(spec.get("containers") or [])), reason, restarts,
            _age(meta.get("creationTimestamp")), status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>", "<none>"]


def _node_row(node):
    meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = {"True": "Ready", "False": "NotReady"}.get(ready, "Unknown")
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = sorted(k.split("/", 1)[1] for k in (meta.get("labels") or {}) if k.startswith("node-role.kubernetes.io/"))
    internal = next((a.get("address") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), "<none>")
    return [meta["name"], state, ",".join(roles) or "<none>", _age(meta.get("creationTimestamp")),
            (status.get("nodeInfo") or {}).get("kubeletVersion", ""), internal]


def _job_row(job):
    meta, spec, status = job["metadata"], job.get("spec") or {}, job.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    state = "Complete" if conditions.get("Complete") == "True" else "Failed" if conditions.get("Failed") == "True" \
        else "Suspended" if spec.get("suspend") else "Running"
    return [meta["name"], state, "%d/%d" % (status.get("succeeded", 0), spec.get("completions", 1)), "",
            _age(meta.get("creationTimestamp"))]


def _event_row(ev):
    involved = ev.get("involvedObject") or {}
    return [_age(ev.get("lastTimestamp") or ev.get("eventTime") or ev["metadata"].get("creationTimestamp")),
            ev.get("type", ""), ev.get("reason", ""), "%s/%s" % ((involved.get("kind") or "").lower(), involved.get("name", "")),
            ev.get("message", "")]


_PRINTERS = {
    "pods": ([_col("Name", fmt="name"), _col("Ready"), _col("Status"), _col("Restarts", "integer"), _col("Age"),
              _col("IP", priority=1), _col("Node", priority=1), _col("Nominated Node", priority=1),
              _col("Readiness Gates", priority=1)], _pod_row),
    "nodes": ([_col("Name", fmt="name"), _col("Status"), _col("Roles"), _col("Age"), _col("Version"),
               _col("Internal-IP", priority=1)], _node_row),
    "namespaces": ([_col("Name", fmt="name"), _col("Status"), _col("Age")],
                   lambda ns: [ns["metadata"]["name"], (ns.get("status") or {}).get("phase", ""),
                               _age(ns["metadata"].get("creationTimestamp"))]),
    "jobs": ([_col("Name", fmt="name"), _col("Status"), _col("Completions"), _col("Duration"), _col("Age")], _job_row),
    "events": ([_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")], _event_row),
}


def _partial(obj, res):
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table(res, objects, list_meta=None):
    columns, row = _PRINTERS.get(res.name, ([_col("Name", fmt="name"), _col("Age")],
                                            lambda o: [o["metadata"]["name"], _age(o["metadata"].get("creationTimestamp"))]))
    out = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta or {}, "columnDefinitions": columns,
           "rows": [{"cells": row(o), "object": _partial(o, res)} for o in objects]}
    return out
