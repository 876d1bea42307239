"""The REST semantics of the served kinds over etcd: kube-apiserver's generic registry, in small.

create (uid, creationTimestamp, generateName, namespace must exist and not be terminating),
get, list (selectors, limit/continue at one revision), update (resourceVersion precondition,
otherwise a compare-and-swap retry loop like GuaranteedUpdate), patch, delete (preconditions,
graceful deletion of pods, finalizers, propagation policy for jobs), deletecollection, and the
pod subresources status, binding and eviction. Each kind's strategy (what create resets, what an
update may change, what is validated) is in the `_prepare_*` and `_validate*` methods below.
Thread safety: a Registry is shared by all server threads; all state is in etcd except a
short-lived cache of namespaces (as kube-apiserver's NamespaceLifecycle admission reads an
informer), so concurrent writers are serialized by etcd's compare on mod_revision.
"""

import base64
import copy
import json
import random
import threading
import time
import uuid

from . import errors, patch, validation
from .errors import ApiError
from .etcd_store import Compacted, FutureRevision, prefix_end
from .resources import JOBS, NAMESPACES, NODES, PODS, PRIORITY_CLASSES, EVENTS
from .selectors import fields_match, labels_match, parse_field_selector, parse_label_selector

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
NAMESPACE_CACHE_SECONDS = 2.0


def now_rfc3339(offset=0):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + offset))


def parse_rfc3339(text):
    import calendar
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


def encode(obj):
    meta = obj.get("metadata") or {}
    rv = meta.pop("resourceVersion", None)
    try:
        return json.dumps(obj, separators=(",", ":")).encode()
    finally:
        if rv is not None:
            meta["resourceVersion"] = rv


def decode(kv, revision=None):
    obj = json.loads(kv.value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision or kv.mod_revision)
    return obj


class Selector:
    """A parsed labelSelector plus fieldSelector for one resource."""

    def __init__(self, resource, label_selector, field_selector):
        try:
            self.labels = parse_label_selector(label_selector)
            self.fields = parse_field_selector(field_selector, resource.fields)
        except ValueError as e:
            raise errors.bad_request(str(e)) from None
        self.fields = [(resource.field_path(f), neg, v) for f, neg, v in self.fields]
        self.empty = not self.labels and not self.fields

    def matches(self, obj):
        return self.empty or (labels_match(self.labels, obj.get("metadata", {}).get("labels"))
                              and fields_match(self.fields, obj))


class _CachedKV:
    __slots__ = ("key", "value", "mod_revision")

    def __init__(self, key, value, mod_revision):
        self.key, self.value, self.mod_revision = key, value, mod_revision


class Registry:
    # Writes start from the last value this registry read or wrote for the key, not a fresh read:
    # etcd's compare on mod_revision still decides (a stale value only costs one retry with the
    # current value the failed transaction returns), and a bind or a kubelet status write costs
    # one etcd round trip instead of two. Preconditions are never judged on a cached value.
    KV_CACHE_LIMIT = 200000

    def __init__(self, etcd):
        self.etcd = etcd
        self._kv_cache = {}
        self._cache_lock = threading.Lock()
        self._pc_cache = (0.0, [])  # priority classes for globalDefault, as an admission informer
        self._ns_cache = {}
        self._ns_lock = threading.Lock()
        self.on_namespace_deleted = None

    # ---- reads ------------------------------------------------------------------------------

    def get(self, res, ns, name):
        kv, _ = self.etcd.get(res.key(ns, name))
        if kv is None:
            raise errors.not_found(res.group, res.name, name)
        self._remember(kv)
        return decode(kv), kv

    def _remember(self, kv):
        """Caches `kv` unless a newer value of the key is cached (a read that raced a write
        must not put the older value back)."""
        with self._cache_lock:
            if len(self._kv_cache) >= self.KV_CACHE_LIMIT:
                self._kv_cache.clear()
            cached = self._kv_cache.get(kv.key)
            if cached is None or cached.mod_revision <= kv.mod_revision:
                self._kv_cache[kv.key] = kv

    def _forget(self, key):
        with self._cache_lock:
            self._kv_cache.pop(key, None)

    def _current(self, key, fresh=False):
        """(KeyValue or None when absent, whether it came from the cache): from etcd when not
        cached or `fresh`."""
        kv = None if fresh else self._kv_cache.get(key)
        if kv is not None:
            return kv, True
        kv, _ = self.etcd.get(key)
        if kv is not None:
            self._remember(kv)
        return kv, False

    def list(self, res, ns, selector, limit=0, continue_token=None, resource_version=None):
        """A <Kind>List dict at one etcd revision, with metadata.continue when `limit` cut it."""
        prefix = res.prefix(ns)
        end = prefix_end(prefix)
        start, revision = prefix, 0
        if continue_token:
            start, revision = self._decode_continue(continue_token, prefix)
        elif resource_version not in (None, "", "0"):
            try:
                int(resource_version)
            except ValueError:
                raise errors.bad_request("invalid resource version: %s" % resource_version) from None
        items, more, next_start = [], False, None
        page = limit if limit > 0 else 0
        while True:
            try:
                kvs, more, header = self.etcd.range(start, end, revision=revision, limit=page)
            except Compacted:
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list result. You can "
                    "start a new list without the continue parameter, or use the continue token in this "
                    "response to retrieve the remainder of the results. Continuing with the provided token "
                    "results in an inconsistent list - objects that were created, modified, or deleted "
                    "between the time the first chunk was returned and now may show up in the list.") from None
            if revision == 0:
                revision = header
            for i, kv in enumerate(kvs):
                obj = decode(kv)
                if selector.matches(obj):
                    obj.pop("kind", None)
                    obj.pop("apiVersion", None)
                    items.append(obj)
                    if limit and len(items) == limit:
                        if i + 1 < len(kvs) or more:
                            next_start = kv.key + b"\0"
                        break
            if next_start is not None or not more or not kvs:
                break
            start = kvs[-1].key + b"\0"
        meta = {"resourceVersion": str(revision)}
        if next_start is not None:
            token = {"v": "meta.k8s.io/v1", "rv": revision, "start": next_start[len(prefix):].decode()}
            meta["continue"] = base64.b64encode(json.dumps(token, separators=(",", ":")).encode()).decode()
            if selector.empty:
                meta["remainingItemCount"] = self.etcd.count(next_start, end, revision)
        return {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta, "items": items}

    @staticmethod
    def _decode_continue(token, prefix):
        try:
            data = json.loads(base64.b64decode(token, validate=False))
            if data.get("v") != "meta.k8s.io/v1" or "start" not in data:
                raise ValueError
            revision = int(data["rv"])
            start = prefix + data["start"].encode()
        except (ValueError, TypeError, KeyError):
            raise errors.bad_request("continue key is not valid: invalid continue token") from None
        return start, revision

    # ---- create -----------------------------------------------------------------------------

    def create(self, res, ns, obj, user="", dry_run=False):
        if not isinstance(obj, dict):
            raise errors.bad_request("the body of the request was not a JSON object")
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = ns
            self._check_namespace(res, ns, meta.get("name") or meta.get("generateName", ""))
        else:
            meta.pop("namespace", None)
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version
        generate = not meta.get("name") and meta.get("generateName")
        for attempt in range(8):
            if generate:
                meta["name"] = meta["generateName"] + "".join(random.choice(_NAME_CHARS) for _ in range(5))
            if not meta.get("name"):
                raise errors.invalid(res.group, res.kind, "", [("metadata.name", "FieldValueRequired",
                                                                 "Required value: name or generateName is required")])
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"):
                meta.pop(field, None)
            if res is not NAMESPACES and res is not PODS:
                meta["generation"] = 1
            self._prepare_create(res, obj)
            self._validate(res, obj)
            if dry_run:
                return obj
            key = res.key(ns, meta["name"])
            value = encode(obj)
            ok, revision, _ = self.etcd.create(key, value)
            if ok:
                self._remember(_CachedKV(key, value, revision))
                meta["resourceVersion"] = str(revision)
                if res is NAMESPACES:
                    self._remember_namespace(obj)
                return obj
            if not generate:
                raise errors.already_exists(res.group, res.name, meta["name"])
        raise errors.already_exists(res.group, res.name, meta["name"])

    def _check_namespace(self, res, ns, name):
        entry = self._ns_cache.get(ns)
        if entry is None or entry[0] < time.monotonic():
            kv, _ = self.etcd.get(NAMESPACES.key(None, ns))
            if kv is None:
                raise errors.not_found("", "namespaces", ns)
            entry = self._remember_namespace(decode(kv))
        if entry[1] == "Terminating":
            raise errors.forbidden('%s "%s" is forbidden: unable to create new content in namespace %s because it '
                                   'is being terminated' % (res.name, name, ns), res.group, res.name, name)

    def _remember_namespace(self, ns_obj):
        phase = (ns_obj.get("status") or {}).get("phase", "Active")
        if ns_obj.get("metadata", {}).get("deletionTimestamp"):
            phase = "Terminating"
        entry = (time.monotonic() + NAMESPACE_CACHE_SECONDS, phase)
        with self._ns_lock:
            self._ns_cache[ns_obj["metadata"]["name"]] = entry
        return entry

    def _prepare_create(self, res, obj):
        if res is PODS:
            spec = obj.get("spec")
            priority = None
            if isinstance(spec, dict):
                priority = self._admit_priority(obj)
            obj["status"] = {}
            if isinstance(spec, dict):
                validation.default_pod(obj, priority)
        elif res is NAMESPACES:
            validation.default_namespace(obj)
        elif res is JOBS:
            if isinstance(obj.get("spec"), dict):
                validation.default_job(obj)
        elif res is NODES:
            obj.setdefault("spec", {})
            obj.setdefault("status", {})

    def _admit_priority(self, pod):
        spec = pod["spec"]
        name = spec.get("priorityClassName")
        pc = None
        if name:
            kv, _ = self.etcd.get(PRIORITY_CLASSES.key(None, name))
            if kv is None:
                raise errors.forbidden('pods "%s" is forbidden: no PriorityClass with name %s was found'
                                       % (pod["metadata"].get("name", ""), name), "", "pods")
            pc = decode(kv)
        else:
            expires, classes = self._pc_cache
            if expires < time.monotonic():
                kvs, _, _ = self.etcd.range(PRIORITY_CLASSES.prefix(), prefix_end(PRIORITY_CLASSES.prefix()))
                classes = [decode(kv) for kv in kvs]
                self._pc_cache = (time.monotonic() + NAMESPACE_CACHE_SECONDS, classes)
            for candidate in classes:
                if candidate.get("globalDefault"):
                    pc = candidate
                    spec["priorityClassName"] = candidate["metadata"]["name"]
        value = pc.get("value", 0) if pc else 0
        if "priority" in spec and spec["priority"] != value:
            raise errors.forbidden('pods "%s" is forbidden: the integer value of priority (%s) must not be provided '
                                   'in pod spec; priority admission controller computed %d from the given '
                                   'PriorityClass name' % (pod["metadata"].get("name", ""), spec["priority"], value),
                                   "", "pods")
        if pc and pc.get("preemptionPolicy"):
            spec["preemptionPolicy"] = pc["preemptionPolicy"]
        return value

    def _validate(self, res, obj, old=None):
        errs = validation.Errors()
        meta = obj["metadata"]
        validation.validate_metadata(errs, meta, label_name=res is NAMESPACES)
        if res is PODS:
            validation.validate_pod_spec(errs, obj.get("spec"), "spec")
            if old is not None and not errs:
                validation.validate_pod_update(errs, old, obj)
        elif res is NODES:
            validation.validate_node(errs, obj)
        elif res is JOBS:
            validation.validate_job(errs, obj)
        elif res is EVENTS:
            validation.validate_event(errs, obj, meta.get("namespace"))
        elif res is PRIORITY_CLASSES:
            validation.validate_priority_class(errs, obj)
        if errs:
            raise errors.invalid(res.group, res.kind, meta.get("name", ""), errs.causes)

    # ---- update and patch -------------------------------------------------------------------

    def update(self, res, ns, name, new, subresource=None):
        """PUT: with metadata.resourceVersion it must match (409 Conflict), without it the update
        is unconditional."""
        if not isinstance(new, dict):
            raise errors.bad_request("the body of the request was not a JSON object")
        meta = new.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request("the name of the object (%s) does not match the name on the URL (%s)" % (meta["name"], name))
        if res.namespaced and meta.get("namespace") and meta["namespace"] != ns:
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the request")
        precondition = meta.get("resourceVersion") or None
        return self.guaranteed_update(res, ns, name, lambda old: copy.deepcopy(new), subresource, precondition)

    def patch(self, res, ns, name, content_type, body, subresource=None):
        ctype = (content_type or "").split(";")[0].strip()
        try:
            doc = json.loads(body)
        except ValueError as e:
            raise errors.bad_request("error decoding patch: %s" % e) from None
        if ctype == "application/merge-patch+json":
            fn = lambda old: patch.merge_patch(old, doc)
        elif ctype == "application/strategic-merge-patch+json":
            fn = lambda old: patch.strategic_merge_patch(old, doc)
        elif ctype == "application/json-patch+json":
            fn = lambda old: patch.json_patch(old, doc)
        elif ctype == "application/apply-patch+yaml":
            raise errors.unsupported_media_type(ctype)
        else:
            raise errors.unsupported_media_type(ctype)
        precondition = None
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            precondition = doc["metadata"].get("resourceVersion") or None

        def apply(old):
            try:
                out = fn(old)
            except patch.PatchError as e:
                if e.code == 400:
                    raise errors.bad_request(str(e)) from None
                raise errors.invalid(res.group, res.kind, name, [("", "FieldValueInvalid", str(e))]) from None
            if not isinstance(out, dict):
                raise errors.bad_request("the patch did not produce an object")
            return out

        return self.guaranteed_update(res, ns, name, apply, subresource, precondition)

    def guaranteed_update(self, res, ns, name, mutate, subresource=None, precondition=None, internal=False):
        """Reads the object, computes mutate(copy) -> new object, writes it if nobody wrote in
        between (else re-reads and tries again; with a precondition RV a mismatch is a 409)."""
        key = res.key(ns, name)
        kv, cached = self._current(key, fresh=precondition is not None)
        for attempt in range(100):
            if kv is None:
                self._forget(key)
                raise errors.not_found(res.group, res.name, name)
            old = decode(kv)
            if precondition is not None and precondition != old["metadata"]["resourceVersion"]:
                raise errors.modified_conflict(res.group, res.name, name)
            try:
                new = mutate(decode(kv))
                if new is not None:
                    new = self._prepare_update(res, old, new, subresource, internal)
            except Exception:
                if not cached:
                    raise
                new = None  # judged on a cached value: judge again on a fresh one
            if new is None or new == old:
                if cached:  # "nothing to do" or a refusal is only decided on the current value
                    kv, cached = self._current(key, fresh=True)
                    continue
                return old
            delete_now = self._finalized(res, new)
            if delete_now:
                ok, revision, current = self.etcd.delete(key, kv.mod_revision)
                if ok:
                    self._forget(key)
                    new["metadata"]["resourceVersion"] = str(revision)
                    return new
            else:
                value = encode(new)
                ok, revision, current = self.etcd.update(key, value, kv.mod_revision)
                if ok:
                    self._remember(_CachedKV(key, value, revision))
                    new["metadata"]["resourceVersion"] = str(revision)
                    if res is NAMESPACES:
                        self._remember_namespace(new)
                    return new
            if precondition is not None:
                raise errors.modified_conflict(res.group, res.name, name)
            kv, cached = current, False
            if kv is not None:
                self._remember(kv)
        raise errors.ApiError(500, "InternalError", "too many conflicts updating %s %s" % (res.name, name))

    @staticmethod
    def _finalized(res, obj):
        meta = obj["metadata"]
        if res is NAMESPACES and (obj.get("spec") or {}).get("finalizers"):
            return False
        return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and \
            not meta.get("deletionGracePeriodSeconds")

    def _prepare_update(self, res, old, new, subresource, internal):
        meta = new.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        old_meta = old["metadata"]
        for field in ("name", "namespace", "uid", "creationTimestamp", "generateName"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        if not internal:
            for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
        meta.pop("resourceVersion", None)
        new["kind"], new["apiVersion"] = res.kind, res.api_version
        if subresource == "status":
            status = new.get("status")
            new = copy.deepcopy(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            new["metadata"].pop("resourceVersion", None)
            if res is NODES:
                self._validate(res, new)
            return self._restore_rv(new, old)
        if subresource is not None:
            raise errors.not_found(res.group, res.name + "/" + subresource, meta.get("name", ""))
        if res in (PODS, NODES, NAMESPACES, JOBS) and not internal:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if res is PODS and isinstance(new.get("spec"), dict):
            for c in (new["spec"].get("containers") or []):
                if isinstance(c, dict) and isinstance(c.get("resources"), dict):
                    limits = c["resources"].get("limits")
                    if isinstance(limits, dict):
                        requests = c["resources"].setdefault("requests", {})
                        for k, v in limits.items():
                            requests.setdefault(k, v)
        if res is not PODS and res is not NAMESPACES and "generation" in old_meta:
            meta["generation"] = old_meta["generation"] + (1 if new.get("spec") != old.get("spec") else 0)
        self._validate(res, new, None if internal else old)
        return self._restore_rv(new, old)

    @staticmethod
    def _restore_rv(new, old):
        # compare without RV: an update that changes nothing writes nothing
        old_rv = old["metadata"].pop("resourceVersion")
        same = new == old
        old["metadata"]["resourceVersion"] = old_rv
        if same:
            new["metadata"]["resourceVersion"] = old_rv
        return new

    # ---- delete -----------------------------------------------------------------------------

    def delete(self, res, ns, name, options):
        """DELETE: (object or None, deleted_now). Pods with a grace period > 0 linger with
        deletionTimestamp; objects with finalizers linger until the last one is removed."""
        options = options or {}
        pre = options.get("preconditions") or {}
        grace_opt = options.get("gracePeriodSeconds")
        if grace_opt is not None and (not isinstance(grace_opt, int) or isinstance(grace_opt, bool)):
            raise errors.bad_request("gracePeriodSeconds must be an integer")
        propagation = options.get("propagationPolicy")
        if propagation is None and options.get("orphanDependents") is not None:
            propagation = "Orphan" if options["orphanDependents"] else "Background"
        if propagation not in (None, "Orphan", "Background", "Foreground"):
            raise errors.invalid("meta.k8s.io", "DeleteOptions", "", [("propagationPolicy", "FieldValueNotSupported",
                                 'Unsupported value: "%s": supported values: "Foreground", "Background", "Orphan"' % propagation)])
        key = res.key(ns, name)
        kv, _ = self._current(key, fresh=bool(pre))
        for attempt in range(100):
            if kv is None:
                self._forget(key)
                raise errors.not_found(res.group, res.name, name)
            obj = decode(kv)
            meta = obj["metadata"]
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise errors.conflict(res.group, res.name, name, "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                                      % (pre["uid"], meta.get("uid")))
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
                raise errors.conflict(res.group, res.name, name, "Precondition failed: ResourceVersion in precondition: %s, "
                                      "ResourceVersion in object meta: %s" % (pre["resourceVersion"], meta["resourceVersion"]))
            grace = 0
            if res is PODS:
                spec, status = obj.get("spec") or {}, obj.get("status") or {}
                grace = grace_opt if grace_opt is not None else spec.get("terminationGracePeriodSeconds", 30)
                if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
                    grace = 0
                grace = max(grace, 0)
                if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds") is not None:
                    grace = min(grace, meta["deletionGracePeriodSeconds"])
            finalizers = list(meta.get("finalizers") or [])
            if res is JOBS and propagation == "Foreground" and "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
            # a namespace with spec.finalizers ("kubernetes") waits for the namespace controller
            terminating = res is NAMESPACES and bool((obj.get("spec") or {}).get("finalizers"))
            if grace > 0 or finalizers or terminating:
                new = copy.deepcopy(obj)
                new["metadata"].pop("resourceVersion")
                if terminating:
                    new.setdefault("status", {})["phase"] = "Terminating"
                if not meta.get("deletionTimestamp") or grace < meta.get("deletionGracePeriodSeconds", grace + 1):
                    new["metadata"]["deletionTimestamp"] = now_rfc3339(grace)
                new["metadata"]["deletionGracePeriodSeconds"] = grace
                new["metadata"]["finalizers"] = finalizers
                if not finalizers:
                    new["metadata"].pop("finalizers")
                if new["metadata"] == {k: v for k, v in meta.items() if k != "resourceVersion"} and \
                        new.get("status") == obj.get("status"):
                    return obj, False
                value = encode(new)
                ok, revision, current = self.etcd.update(key, value, kv.mod_revision)
                if ok:
                    self._remember(_CachedKV(key, value, revision))
                    new["metadata"]["resourceVersion"] = str(revision)
                    self._after_delete(res, new, propagation, deleted=False)
                    return new, False
            else:
                ok, revision, current = self.etcd.delete(key, kv.mod_revision)
                if ok:
                    self._forget(key)
                    obj["metadata"]["resourceVersion"] = str(revision)
                    self._after_delete(res, obj, propagation, deleted=True)
                    return obj, True
            kv = current
            if kv is not None:
                self._remember(kv)
        raise errors.ApiError(500, "InternalError", "too many conflicts deleting %s %s" % (res.name, name))

    def _after_delete(self, res, obj, propagation, deleted):
        if res is JOBS and propagation in ("Background", "Foreground"):
            threading.Thread(target=self._collect_job_pods, args=(obj, propagation), daemon=True).start()
        if res is NAMESPACES and not deleted and self.on_namespace_deleted:
            self._remember_namespace(obj)
            threading.Thread(target=self.on_namespace_deleted, args=(obj["metadata"]["name"],), daemon=True).start()

    def _collect_job_pods(self, job, propagation):
        """The garbage collector's part of a Background/Foreground job delete: pods owned by the
        job go, then (Foreground) the job's finalizer is removed."""
        ns, uid = job["metadata"]["namespace"], job["metadata"]["uid"]
        pods = self.list(PODS, ns, Selector(PODS, "", ""))
        for pod in pods["items"]:
            if any(ref.get("uid") == uid for ref in pod["metadata"].get("ownerReferences") or []):
                try:
                    self.delete(PODS, ns, pod["metadata"]["name"], {"propagationPolicy": "Background"})
                except ApiError:
                    pass
        if propagation == "Foreground":
            def drop(obj):
                obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or [] if f != "foregroundDeletion"]
                return obj
            try:
                self.guaranteed_update(JOBS, ns, job["metadata"]["name"], drop, internal=True)
            except ApiError:
                pass

    def finish_namespace(self, name):
        """The namespace controller: delete everything in a terminating namespace, then it."""
        for res in (PODS, EVENTS, JOBS):
            prefix = res.prefix(name)
            kvs, _, _ = self.etcd.range(prefix, prefix_end(prefix))
            for kv in kvs:
                obj = decode(kv)
                try:
                    self.delete(res, name, obj["metadata"]["name"], {"gracePeriodSeconds": 0, "propagationPolicy": "Background"})
                except ApiError:
                    pass

        def drop(obj):
            obj.setdefault("spec", {})["finalizers"] = []
            obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or [] if f != "kubernetes"]
            obj["metadata"]["deletionGracePeriodSeconds"] = 0
            return obj
        try:
            self.guaranteed_update(NAMESPACES, None, name, drop, internal=True)
        except ApiError:
            pass
        with self._ns_lock:
            self._ns_cache.pop(name, None)

    def delete_collection(self, res, ns, selector, options):
        lst = self.list(res, ns, selector)
        out = []
        for item in lst["items"]:
            try:
                obj, _ = self.delete(res, item["metadata"].get("namespace"), item["metadata"]["name"], options)
                obj.pop("kind", None)
                obj.pop("apiVersion", None)
                out.append(obj)
            except ApiError as e:
                if e.code != 404:
                    raise
        return {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": {"resourceVersion": lst["metadata"]["resourceVersion"]},
                "items": out}

    # ---- pod subresources -------------------------------------------------------------------

    def bind(self, ns, binding, url_name=None):
        if not isinstance(binding, dict):
            raise errors.bad_request("the body of the request was not a JSON object")
        meta = binding.get("metadata") or {}
        name = meta.get("name") or url_name
        if url_name and meta.get("name") and meta["name"] != url_name:
            raise errors.bad_request("the name of the object (%s) does not match the name on the URL (%s)" % (meta["name"], url_name))
        if meta.get("namespace") and meta["namespace"] != ns:
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the request")
        target = binding.get("target") or {}
        node = target.get("name")
        if not name:
            raise errors.invalid("", "Binding", "", [("metadata.name", "FieldValueRequired", "Required value: name or generateName is required")])
        if not node:
            raise errors.invalid("", "Binding", name, [("target.name", "FieldValueRequired", "Required value")])
        if target.get("kind") not in (None, "", "Node"):
            raise errors.invalid("", "Binding", name, [("target.kind", "FieldValueNotSupported", 'Unsupported value: "%s": supported values: "Node"' % target["kind"])])
        uid = meta.get("uid")
        rv = meta.get("resourceVersion")

        def assign(pod):
            # As kube-apiserver's BindingREST (pkg/registry/core/pod/storage): the uid and
            # resourceVersion preconditions first, then the pod's state; nothing is written
            # unless all pass. Only the Binding's annotations are copied onto the pod.
            pm = pod["metadata"]
            if uid and uid != pm.get("uid"):
                raise errors.conflict("", "pods/binding", name, "Precondition failed: UID in precondition: %s, UID in object meta: %s" % (uid, pm.get("uid")))
            if rv and str(rv) != str(pm.get("resourceVersion")):
                raise errors.conflict("", "pods/binding", name, "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s" % (rv, pm.get("resourceVersion")))
            if pm.get("deletionTimestamp"):
                raise errors.conflict("", "pods/binding", name, "pod %s is being deleted, cannot be assigned to a host" % name)
            spec = pod.setdefault("spec", {})
            if spec.get("nodeName"):
                raise errors.conflict("", "pods/binding", name, 'pod %s is already assigned to node "%s"' % (name, spec["nodeName"]))
            if spec.get("schedulingGates"):
                raise errors.conflict("", "pods/binding", name, "pod %s has non-empty .spec.schedulingGates" % name)
            spec["nodeName"] = node
            if binding.get("metadata", {}).get("annotations"):
                pm.setdefault("annotations", {}).update(binding["metadata"]["annotations"])
            conditions = pod.setdefault("status", {}).setdefault("conditions", [])
            conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                               "lastTransitionTime": now_rfc3339()})
            return pod

        self.guaranteed_update(PODS, ns, name, assign, internal=True)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def evict(self, ns, name, eviction):
        """POST pods/{name}/eviction (policy/v1 Eviction): a delete with the eviction's options
        (no PodDisruptionBudgets are served, so it is never refused for one)."""
        if not isinstance(eviction, dict):
            raise errors.bad_request("the body of the request was not a JSON object")
        meta = eviction.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request("name in URL does not match name in Eviction object")
        self.delete(PODS, ns, name, eviction.get("deleteOptions") or {})
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
