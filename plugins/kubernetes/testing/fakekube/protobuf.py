"""The few Kubernetes protobuf request bodies the fake reads: a Namespace (kubectl create namespace).

client-go's typed clients send `application/vnd.kubernetes.protobuf`: the bytes "k8s\\0" and a
runtime.Unknown {typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2}, raw being the object in
the field numbers of k8s.io/api's generated.proto. Without those schemas only Namespace is read
here (metadata name, generateName, labels, annotations, finalizers; spec.finalizers): that is
what `kubectl create namespace` sends. Any other kind in protobuf is a 415, naming the kind.
Every reply of the fake is JSON, which every client accepts.
"""

_MAGIC = b"k8s\x00"


def _varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(data):
    """(number, wire type, value) for each field of one message; value is bytes or an int."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            length, i = _varint(data, i)
            value, i = data[i:i + length], i + length
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError("unsupported protobuf wire type %d" % wire)
        yield number, wire, value


def _map_entry(data):
    key = value = ""
    for n, _, v in fields(data):
        if n == 1:
            key = v.decode()
        elif n == 2:
            value = v.decode()
    return key, value


def _object_meta(data):
    meta = {}
    for n, _, v in fields(data):
        if n in (1, 2, 3):
            meta[("name", "generateName", "namespace")[n - 1]] = v.decode()
        elif n in (11, 12):
            k, val = _map_entry(v)
            meta.setdefault("labels" if n == 11 else "annotations", {})[k] = val
        elif n == 14:
            meta.setdefault("finalizers", []).append(v.decode())
    return meta


def decode(body):
    """The object as a JSON-shaped dict; ValueError naming what cannot be read."""
    if not body.startswith(_MAGIC):
        raise ValueError("not a Kubernetes protobuf body (no k8s\\0 prefix)")
    api_version = kind = ""
    raw = b""
    for n, _, v in fields(body[len(_MAGIC):]):
        if n == 1:
            for m, _, w in fields(v):
                if m == 1:
                    api_version = w.decode()
                elif m == 2:
                    kind = w.decode()
        elif n == 2:
            raw = v
    if (api_version, kind) != ("v1", "Namespace"):
        raise ValueError("protobuf bodies are read only for v1 Namespace, not %s %s; send JSON" % (api_version, kind))
    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {}}
    for n, _, v in fields(raw):
        if n == 1:
            obj["metadata"] = _object_meta(v)
        elif n == 2:
            finalizers = [w.decode() for m, _, w in fields(v) if m == 1]
            if finalizers:
                obj["spec"] = {"finalizers": finalizers}
    return obj
