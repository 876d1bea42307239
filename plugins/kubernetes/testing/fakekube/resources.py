"""The served resources: their names, kinds, keys in etcd and the fields a selector may use.

One `Resource` per REST collection, as kube-apiserver's discovery lists them. Objects live at
`/registry/<resource>/<namespace>/<name>` (namespaced) or `/registry/<resource>/<name>`, stored as
JSON without `metadata.resourceVersion`, which is filled in from the key's mod_revision on read.
"""


class Resource:
    def __init__(self, name, kind, group, version, namespaced, singular, short_names=(),
                 verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
                 fields=(), field_aliases=None, subresources=(), return_deleted=False, categories=()):
        self.name = name
        self.kind = kind
        self.list_kind = kind + "List"
        self.group = group
        self.version = version
        self.api_version = version if not group else "%s/%s" % (group, version)
        self.namespaced = namespaced
        self.singular = singular
        self.short_names = list(short_names)
        self.verbs = list(verbs)
        base = ["metadata.name", "metadata.namespace"] if namespaced else ["metadata.name"]
        self.fields = set(base) | set(fields)
        # field selector label -> path in the object, where they differ
        self.field_aliases = field_aliases or {}
        self.subresources = set(subresources)
        self.return_deleted = return_deleted
        self.categories = list(categories)

    def prefix(self, namespace=None):
        if self.namespaced and namespace:
            return ("/registry/%s/%s/" % (self.name, namespace)).encode()
        return ("/registry/%s/" % self.name).encode()

    def key(self, namespace, name):
        if self.namespaced:
            return ("/registry/%s/%s/%s" % (self.name, namespace, name)).encode()
        return ("/registry/%s/%s" % (self.name, name)).encode()

    def field_path(self, label):
        return self.field_aliases.get(label, label)


PODS = Resource(
    "pods", "Pod", "", "v1", True, "pod", ["po"],
    fields=["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"],
    subresources=["status", "binding", "eviction"], return_deleted=True, categories=["all"])
NODES = Resource("nodes", "Node", "", "v1", False, "node", ["no"], fields=["spec.unschedulable"],
                 subresources=["status"])
NAMESPACES = Resource("namespaces", "Namespace", "", "v1", False, "namespace", ["ns"],
                      verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
                      fields=["status.phase"], subresources=["status"], return_deleted=True)
EVENTS = Resource(
    "events", "Event", "", "v1", True, "event", ["ev"],
    fields=["involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
            "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
            "reason", "reportingComponent", "source", "type"],
    field_aliases={"source": "source.component"})
BINDINGS = Resource("bindings", "Binding", "", "v1", True, "binding", verbs=("create",))
JOBS = Resource("jobs", "Job", "batch", "v1", True, "job", fields=["status.successful"],
                subresources=["status"], categories=["all"])
PRIORITY_CLASSES = Resource("priorityclasses", "PriorityClass", "scheduling.k8s.io", "v1", False,
                            "priorityclass", ["pc"])

ALL = [PODS, NODES, NAMESPACES, EVENTS, BINDINGS, JOBS, PRIORITY_CLASSES]
GROUPS = {}
for _r in ALL:
    GROUPS.setdefault((_r.group, _r.version), {})[_r.name] = _r


def lookup(group, version, name):
    return GROUPS.get((group, version), {}).get(name)


def discovery_resources(group, version):
    out = []
    for r in GROUPS.get((group, version), {}).values():
        out.append({"name": r.name, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
                    "verbs": r.verbs, **({"shortNames": r.short_names} if r.short_names else {}),
                    **({"categories": r.categories} if r.categories else {})})
        for sub in sorted(r.subresources):
            if sub == "binding":
                out.append({"name": "pods/binding", "singularName": "", "namespaced": True, "kind": "Binding",
                            "verbs": ["create"]})
            elif sub == "eviction":
                out.append({"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
                            "version": "v1", "kind": "Eviction", "verbs": ["create"]})
            else:
                out.append({"name": "%s/%s" % (r.name, sub), "singularName": "", "namespaced": r.namespaced,
                            "kind": r.kind, "verbs": ["get", "patch", "update"]})
    return out
