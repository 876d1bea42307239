"""PATCH bodies: JSON merge patch, strategic merge patch and JSON patch.

- `application/merge-patch+json` (RFC 7386): maps merge, `null` deletes a key, lists replace.
- `application/strategic-merge-patch+json`: like merge patch, but lists that Kubernetes' Go types
  tag with a merge key (containers by `name`, ports by `containerPort`, conditions by `type`...)
  merge element by element, and the directives kubectl writes are understood: `$patch: delete`
  / `replace` / `merge` on maps and list items, `$setElementOrder/<list>`,
  `$deleteFromPrimitiveList/<list>`, `$retainKeys`. The merge keys come from the table below
  (the fields of pods, nodes, namespaces, events and jobs that have one), not from OpenAPI;
  a list not in it is replaced, as for a list without a patch strategy. Primitive lists with
  the `merge` strategy (`finalizers`) are unioned.
- `application/json-patch+json` (RFC 6902): add, remove, replace, move, copy, test.
Errors raise PatchError (kube-apiserver answers 422 for a failed test or a bad path, 400 for a
body that is not a patch).
"""

import copy
import json


class PatchError(Exception):
    def __init__(self, message, code=422):
        super().__init__(message)
        self.code = code


# Field name -> merge key, for lists whose Go type has patchStrategy "merge". A field name is
# enough here: across the served kinds each name means one list type.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "addresses": "type",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "readinessGates": "conditionType",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "podIPs": "ip",
}
# Primitive lists with the merge strategy: elements are unioned.
MERGE_PRIMITIVES = {"finalizers"}


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target, patch):
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object", 400)
    return _smp_map(target if isinstance(target, dict) else {}, patch)


def _smp_map(original, patch):
    directive = patch.get("$patch")
    if directive == "replace":
        out = {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
        return out
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError("Unknown patch type: %s in map: %s" % (directive, json.dumps(patch)))
    result = copy.deepcopy(original)
    retain = patch.get("$retainKeys")
    orders = {}
    deletes = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            deletes[key.split("/", 1)[1]] = value
            continue
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        if isinstance(value, dict):
            merged = _smp_map(current if isinstance(current, dict) else {}, value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _smp_list(key, current if isinstance(current, list) else [], value)
        else:
            result[key] = copy.deepcopy(value)
    for key, values in deletes.items():
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in values]
    for key, order in orders.items():
        if isinstance(result.get(key), list):
            result[key] = _apply_order(key, result[key], order)
    if retain is not None:
        for key in list(result):
            if key not in retain:
                del result[key]
    return result


def _smp_list(field, original, patch):
    merge_key = MERGE_KEYS.get(field)
    if field in MERGE_PRIMITIVES:
        out = list(original)
        for v in patch:
            if v not in out:
                out.append(copy.deepcopy(v))
        return out
    if merge_key is None:
        if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
            return [copy.deepcopy({k: x for k, x in v.items() if k != "$patch"}) for v in patch
                    if not (isinstance(v, dict) and v.get("$patch") == "replace" and len(v) == 1)]
        return copy.deepcopy(patch)
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return [copy.deepcopy(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    out = copy.deepcopy(original)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError("%s: list items must be objects with the merge key %r" % (field, merge_key))
        if merge_key not in item:
            raise PatchError("map: %s does not contain declared merge key: %s" % (json.dumps(item), merge_key))
        index = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(merge_key) == item[merge_key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del out[index]
            continue
        if index is None:
            out.append(_smp_map({}, item))
        else:
            out[index] = _smp_map(out[index], item)
    return out


def _apply_order(field, items, order):
    merge_key = MERGE_KEYS.get(field)

    def ident(v):
        return v.get(merge_key) if merge_key and isinstance(v, dict) else json.dumps(v, sort_keys=True)

    wanted = [o.get(merge_key) if merge_key and isinstance(o, dict) else json.dumps(o, sort_keys=True) for o in order]
    rank = {w: i for i, w in enumerate(wanted)}
    listed = sorted((v for v in items if ident(v) in rank), key=lambda v: rank[ident(v)])
    rest = [v for v in items if ident(v) not in rank]
    return listed + rest


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % path, 400)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise PatchError("doc is missing path: %s" % ("/" + "/".join(parts)))
            cur = cur[p]
        elif isinstance(cur, list):
            try:
                cur = cur[int(p)]
            except (ValueError, IndexError):
                raise PatchError("doc is missing path: %s" % ("/" + "/".join(parts))) from None
        else:
            raise PatchError("doc is missing path: %s" % ("/" + "/".join(parts)))
    return cur


def _add(doc, parts, value):
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                i = int(last)
            except ValueError:
                raise PatchError("invalid list index %r" % last) from None
            if i < 0 or i > len(parent):
                raise PatchError("add operation index out of bounds: %d" % i)
            parent.insert(i, value)
    else:
        raise PatchError("doc is missing path: /%s" % "/".join(parts))
    return doc


def _remove(doc, parts):
    if not parts:
        raise PatchError("cannot remove the whole document")
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    try:
        if isinstance(parent, dict):
            return parent.pop(last) if last in parent else _missing(parts)
        if isinstance(parent, list):
            return parent.pop(int(last))
    except (ValueError, IndexError):
        pass
    _missing(parts)


def _missing(parts):
    raise PatchError("unable to remove nonexistent key: %s: missing value" % parts[-1])


def json_patch(target, ops):
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations", 400)
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError("invalid JSON patch operation: %s" % json.dumps(op), 400)
        kind, parts = op["op"], _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            _walk(doc, parts)
            if not parts:
                doc = copy.deepcopy(op.get("value"))
            else:
                _remove(doc, parts)
                doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = copy.deepcopy(_walk(doc, source))
            if kind == "move":
                _remove(doc, source)
            doc = _add(doc, parts, value)
        elif kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise PatchError("testing value %s failed" % op["path"])
        else:
            raise PatchError("Unexpected kind: %s" % kind, 400)
    return doc
