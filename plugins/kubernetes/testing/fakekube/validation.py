"""Defaulting and validation of the served kinds, the subset of kube-apiserver's that clients rely on.

What is checked (each failure a 422 Invalid with kube-apiserver's field path and message):
names (DNS-1123 subdomain, or label for namespaces), name or generateName required, label keys
and values, pod containers (required, unique DNS-label names, image required), resource
quantities (parseable; extended resources such as `nvidia.com/gpu` integer, limit required, and
requests equal to limits; cpu/memory requests not above limits), restartPolicy and the job
template's restartPolicy, tolerations, node capacity/allocatable quantities and taint effects,
pod spec updates (only images, activeDeadlineSeconds, added tolerations, terminationGrace may
change). What is defaulted: what `kubectl get -o yaml` shows on a fresh object (restartPolicy,
dnsPolicy, schedulerName, terminationGracePeriodSeconds, imagePullPolicy, termination message,
requests from limits, the not-ready/unreachable tolerations of the DefaultTolerationSeconds
admission plugin, qosClass, phase Pending; job parallelism, completions, backoffLimit, selector
and template labels; namespace finalizers and phase). Not done: OpenAPI schema checks (unknown
fields are kept, wrong types are only caught where a check below reads the field), volumes,
probes, security contexts, service accounts, resource quotas, limit ranges.
"""

import copy
import re
from decimal import Decimal, InvalidOperation

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(|[numkMGTPE]|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)$")
_SUFFIX = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2 ** 10), "Mi": Decimal(2 ** 20), "Gi": Decimal(2 ** 30), "Ti": Decimal(2 ** 40),
    "Pi": Decimal(2 ** 50), "Ei": Decimal(2 ** 60),
}

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                 "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
                 "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
             "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
             "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
NATIVE_RESOURCES = {"cpu", "memory", "ephemeral-storage", "storage", "pods"}


def parse_quantity(text):
    """A Kubernetes quantity ("500m", "8", "16Gi", "1e3") as a Decimal; ValueError if invalid."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return Decimal(str(text))
    m = _QUANTITY.match(str(text).strip()) if isinstance(text, str) else None
    if not m:
        raise ValueError("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    number, suffix = m.group(1), m.group(2)
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number) * (Decimal(10) ** int(suffix[1:]))
        return Decimal(number) * _SUFFIX[suffix]
    except InvalidOperation:
        raise ValueError("unable to parse quantity's suffix") from None


def quantity_str(value):
    return value if isinstance(value, str) else str(value)


class Errors:
    """Collects (field, reason, message) causes."""

    def __init__(self):
        self.causes = []

    def required(self, field, detail=""):
        self.causes.append((field, "FieldValueRequired", "Required value" + (": " + detail if detail else "")))

    def invalid(self, field, value, detail):
        shown = '"%s"' % value if isinstance(value, str) else str(value)
        self.causes.append((field, "FieldValueInvalid", "Invalid value: %s: %s" % (shown, detail)))

    def unsupported(self, field, value, supported):
        self.causes.append((field, "FieldValueNotSupported", 'Unsupported value: "%s": supported values: %s'
                            % (value, ", ".join('"%s"' % s for s in supported))))

    def duplicate(self, field, value):
        self.causes.append((field, "FieldValueDuplicate", 'Duplicate value: "%s"' % value))

    def forbidden(self, field, detail):
        self.causes.append((field, "FieldValueForbidden", "Forbidden: " + detail))

    def __bool__(self):
        return bool(self.causes)


def is_qualified_name(key):
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED.match(name))


def validate_metadata(errs, meta, label_name=False):
    name = meta.get("name", "")
    if not isinstance(name, str):
        errs.invalid("metadata.name", name, "must be a string")
    elif label_name:
        if len(name) > 63:
            errs.invalid("metadata.name", name, "must be no more than 63 characters")
        elif not _LABEL.match(name):
            errs.invalid("metadata.name", name, LABEL_MSG)
    elif len(name) > 253:
        errs.invalid("metadata.name", name, "must be no more than 253 characters")
    elif not _SUBDOMAIN.match(name):
        errs.invalid("metadata.name", name, SUBDOMAIN_MSG)
    for kind in ("labels", "annotations"):
        values = meta.get(kind) or {}
        if not isinstance(values, dict):
            errs.invalid("metadata." + kind, str(values), "must be a map of strings")
            continue
        for key, value in values.items():
            if not is_qualified_name(key):
                errs.invalid("metadata.%s" % kind, key, "name part must consist of alphanumeric characters, "
                             "'-', '_' or '.', and must start and end with an alphanumeric character")
            if not isinstance(value, str):
                errs.invalid("metadata.%s" % kind, str(value), "must be a string")
            elif kind == "labels" and (len(value) > 63 or not _LABEL_VALUE.match(value)):
                errs.invalid("metadata.labels", value, "a valid label must be an empty string or consist of "
                             "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                             "alphanumeric character")


def is_extended(resource):
    return "/" in resource and not resource.startswith(("kubernetes.io/", "requests."))


# ---- pods -------------------------------------------------------------------------------------

def default_pod(pod, priority=None):
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if priority is not None:
        spec["priority"] = priority
    else:
        spec.setdefault("priority", 0)
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or []:
            if not isinstance(c, dict):
                continue
            image = c.get("image", "")
            if "imagePullPolicy" not in c and isinstance(image, str):
                tag = image.rsplit("/", 1)[-1]
                c["imagePullPolicy"] = "Always" if (":" not in tag or tag.endswith(":latest")) and "@" not in tag else "IfNotPresent"
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            res = c.setdefault("resources", {})
            if isinstance(res, dict) and isinstance(res.get("limits"), dict):
                requests = res.setdefault("requests", {})
                if isinstance(requests, dict):
                    for name, value in res["limits"].items():
                        requests.setdefault(name, value)
    tolerations = spec.setdefault("tolerations", [])
    if isinstance(tolerations, list):
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(isinstance(t, dict) and (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
                       and t.get("effect", "NoExecute") in ("NoExecute", "") for t in tolerations):
                tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status["qosClass"] = qos_class(spec)


def qos_class(spec):
    requests_any, guaranteed = False, True
    for c in spec.get("containers") or []:
        if not isinstance(c, dict):
            continue
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        for name in ("cpu", "memory"):
            if name in requests or name in limits:
                requests_any = True
            if name not in limits or name not in requests:
                guaranteed = False
            else:
                try:
                    if parse_quantity(limits[name]) != parse_quantity(requests[name]):
                        guaranteed = False
                except ValueError:
                    guaranteed = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _validate_resources(errs, path, res):
    if not isinstance(res, dict):
        errs.invalid(path, str(res), "must be an object")
        return
    parsed = {}
    for kind in ("limits", "requests"):
        values = res.get(kind) or {}
        if not isinstance(values, dict):
            errs.invalid("%s.%s" % (path, kind), str(values), "must be a map of resource names to quantities")
            continue
        for name, value in values.items():
            field = "%s.%s[%s]" % (path, kind, name)
            if "/" not in name and name not in NATIVE_RESOURCES and not name.startswith("hugepages-"):
                errs.invalid(field, name, "must be a standard resource for containers")
                continue
            try:
                q = parse_quantity(value)
            except ValueError as e:
                errs.invalid(field, quantity_str(value), str(e))
                continue
            if q < 0:
                errs.invalid(field, quantity_str(value), "must be greater than or equal to 0")
            if is_extended(name) and q != q.to_integral_value():
                errs.invalid(field, quantity_str(value), "must be an integer")
            parsed[(kind, name)] = (q, value)
    limits = {n: v for (k, n), v in parsed.items() if k == "limits"}
    requests = {n: v for (k, n), v in parsed.items() if k == "requests"}
    for name, (q, raw) in requests.items():
        if is_extended(name):
            if name not in limits:
                errs.required("%s.limits" % path, "Limit must be set for non overcommitable resources")
            elif limits[name][0] != q:
                errs.invalid("%s.requests[%s]" % (path, name), quantity_str(raw),
                             "must be equal to %s limit of %s" % (name, quantity_str(limits[name][1])))
        elif name in limits and q > limits[name][0]:
            errs.invalid("%s.requests[%s]" % (path, name), quantity_str(raw),
                         "must be less than or equal to %s limit of %s" % (name, quantity_str(limits[name][1])))


def _validate_tolerations(errs, path, tolerations):
    if not isinstance(tolerations, list):
        errs.invalid(path, str(tolerations), "must be a list")
        return
    for i, t in enumerate(tolerations):
        p = "%s[%d]" % (path, i)
        if not isinstance(t, dict):
            errs.invalid(p, str(t), "must be an object")
            continue
        op = t.get("operator", "Equal")
        if op not in ("Equal", "Exists"):
            errs.unsupported(p + ".operator", op, ["Equal", "Exists"])
        if op == "Exists" and t.get("value"):
            errs.invalid(p + ".operator", t.get("value"), "value must be empty when `operator` is 'Exists'")
        if not t.get("key") and op != "Exists":
            errs.invalid(p + ".operator", op, "operator must be Exists when `key` is empty, which means \"match all values and all keys\"")
        effect = t.get("effect", "")
        if effect not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"):
            errs.unsupported(p + ".effect", effect, ["NoSchedule", "PreferNoSchedule", "NoExecute"])
        if "tolerationSeconds" in t and effect != "NoExecute":
            errs.invalid(p + ".effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")


def validate_pod_spec(errs, spec, path, restart_policies=("Always", "OnFailure", "Never")):
    if not isinstance(spec, dict):
        errs.required(path)
        return
    containers = spec.get("containers")
    if not containers:
        errs.required(path + ".containers")
    names = set()
    for field in ("initContainers", "containers"):
        items = spec.get(field) or []
        if not isinstance(items, list):
            errs.invalid("%s.%s" % (path, field), str(items), "must be a list")
            continue
        for i, c in enumerate(items):
            p = "%s.%s[%d]" % (path, field, i)
            if not isinstance(c, dict):
                errs.invalid(p, str(c), "must be an object")
                continue
            name = c.get("name")
            if not name:
                errs.required(p + ".name")
            elif not isinstance(name, str) or len(name) > 63 or not _LABEL.match(name):
                errs.invalid(p + ".name", name, LABEL_MSG)
            elif name in names:
                errs.duplicate(p + ".name", name)
            else:
                names.add(name)
            if not c.get("image"):
                errs.required(p + ".image")
            if "resources" in c:
                _validate_resources(errs, p + ".resources", c["resources"])
    policy = spec.get("restartPolicy", "Always")
    if policy not in restart_policies:
        errs.unsupported(path + ".restartPolicy", policy, list(restart_policies))
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or grace < 0):
        errs.invalid(path + ".terminationGracePeriodSeconds", grace, "must be greater than or equal to 0")
    node = spec.get("nodeName")
    if node and (not isinstance(node, str) or not _SUBDOMAIN.match(node)):
        errs.invalid(path + ".nodeName", node, SUBDOMAIN_MSG)
    if "tolerations" in spec:
        _validate_tolerations(errs, path + ".tolerations", spec["tolerations"])
    selector = spec.get("nodeSelector")
    if selector is not None and not isinstance(selector, dict):
        errs.invalid(path + ".nodeSelector", str(selector), "must be a map of strings")


def _mask_mutable(spec):
    spec = copy.deepcopy(spec)
    for field in ("containers", "initContainers"):
        for c in spec.get(field) or []:
            if isinstance(c, dict):
                c.pop("image", None)
    spec.pop("activeDeadlineSeconds", None)
    spec.pop("tolerations", None)
    spec.pop("terminationGracePeriodSeconds", None)
    return spec


def validate_pod_update(errs, old, new):
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if _mask_mutable(old_spec) != _mask_mutable(new_spec):
        errs.forbidden("spec", "pod updates may not change fields other than `spec.containers[*].image`,"
                       "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                       "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                       "(allow it to be set to 1 if it was previously negative)")
        return
    old_tol = old_spec.get("tolerations") or []
    new_tol = new_spec.get("tolerations") or []
    if any(t not in new_tol for t in old_tol):
        errs.forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds")


# ---- nodes, namespaces, jobs, events, priority classes ------------------------------------------

def validate_node(errs, node):
    for kind in ("capacity", "allocatable"):
        values = (node.get("status") or {}).get(kind) or {}
        if not isinstance(values, dict):
            errs.invalid("status." + kind, str(values), "must be a map of resource names to quantities")
            continue
        for name, value in values.items():
            try:
                q = parse_quantity(value)
            except ValueError as e:
                errs.invalid("status.%s[%s]" % (kind, name), quantity_str(value), str(e))
                continue
            if is_extended(name) and q != q.to_integral_value():
                errs.invalid("status.%s[%s]" % (kind, name), quantity_str(value), "must be an integer")
    for i, taint in enumerate((node.get("spec") or {}).get("taints") or []):
        p = "spec.taints[%d]" % i
        if not isinstance(taint, dict) or not taint.get("key"):
            errs.required(p + ".key")
            continue
        if not is_qualified_name(taint["key"]):
            errs.invalid(p + ".key", taint["key"], "name part must consist of alphanumeric characters, '-', '_' or '.'")
        if taint.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            if not taint.get("effect"):
                errs.required(p + ".effect")
            else:
                errs.unsupported(p + ".effect", taint.get("effect"), ["NoSchedule", "PreferNoSchedule", "NoExecute"])


def default_namespace(ns):
    name = ns["metadata"]["name"]
    ns["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    ns.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    ns["status"] = {"phase": "Active"}


def default_job(job):
    spec = job.setdefault("spec", {})
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", None)
    if spec.get("manualSelector") is None:
        spec.pop("manualSelector")
    uid, name = job["metadata"]["uid"], job["metadata"]["name"]
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels.update({"controller-uid": uid, "batch.kubernetes.io/controller-uid": uid,
                       "job-name": name, "batch.kubernetes.io/job-name": name})
        if not spec.get("manualSelector"):
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        pod = {"spec": template.setdefault("spec", {})}
        if isinstance(pod["spec"], dict):
            default_pod(pod)
    job["status"] = {}


def validate_job(errs, job):
    spec = job.get("spec") or {}
    template = spec.get("template")
    if not isinstance(template, dict) or not template:
        errs.required("spec.template")
        return
    tspec = template.get("spec")
    validate_pod_spec(errs, tspec, "spec.template.spec", restart_policies=("OnFailure", "Never"))
    for field in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or value < 0):
            errs.invalid("spec." + field, value, "must be greater than or equal to 0")


def validate_event(errs, event, namespace):
    involved = event.get("involvedObject")
    if not isinstance(involved, dict):
        errs.required("involvedObject")
        return
    if involved.get("namespace") and involved.get("namespace") != namespace:
        errs.invalid("involvedObject.namespace", involved.get("namespace"), "does not match event.namespace")


def validate_priority_class(errs, pc):
    value = pc.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        errs.required("value")
    elif value > 1000000000 and not pc["metadata"]["name"].startswith("system-"):
        errs.forbidden("value", "maximum allowed value of a user defined priority is 1000000000")
