"""Label and field selectors, parsed and matched the way k8s.io/apimachinery does.

A label selector is a comma-separated list of requirements that must all hold:
`key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key` (exists),
`!key` (does not exist), `key>N`, `key<N`. `!=` and `notin` also match objects without the key.
A field selector is `field=value`, `field==value` or `field!=value`, comma-separated, over the
fields each resource supports (an unsupported field is a 400, "field label not supported").
A parse error raises ValueError with the message kube-apiserver gives.
"""

import re

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _tokens(text):
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith(("==", "!="), i):
            out.append(text[i:i + 2])
            i += 2
        elif c in "=(),!<>":
            out.append(c)
            i += 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in "=(),!<>":
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _check_key(key):
    if not _KEY.match(key) or len(key.split("/")[-1]) > 63:
        raise ValueError("unable to parse requirement: invalid label key %r" % key)


def _check_value(value):
    if len(value) > 63 or not _VALUE.match(value):
        raise ValueError("unable to parse requirement: invalid label value: %r" % value)


def parse_label_selector(text):
    """A list of (key, op, values) with op in =, !=, in, notin, exists, !, gt, lt."""
    toks = _tokens(text or "")
    reqs, i = [], 0

    def peek(k=0):
        return toks[i + k] if i + k < len(toks) else None

    while i < len(toks):
        if toks[i] == "!":
            key = peek(1)
            if key is None or key in "=(),!<>":
                raise ValueError("unable to parse requirement: found %r, expected: identifier after '!'" % key)
            _check_key(key)
            reqs.append((key, "!", ()))
            i += 2
        else:
            key = toks[i]
            if key in ("=", "==", "!=", "(", ")", ",", "<", ">"):
                raise ValueError("unable to parse requirement: found %r, expected: !, identifier, or 'end of string'" % key)
            _check_key(key)
            op = peek(1)
            if op is None or op == ",":
                reqs.append((key, "exists", ()))
                i += 1
            elif op in ("=", "==", "!="):
                value = peek(2)
                if value is None or value == ",":
                    value = ""
                    i += 2
                else:
                    i += 3
                _check_value(value)
                reqs.append((key, "!=" if op == "!=" else "=", (value,)))
            elif op in ("in", "notin"):
                if peek(2) != "(":
                    raise ValueError("unable to parse requirement: found %r, expected: '('" % peek(2))
                i += 3
                values = []
                while True:
                    tok = peek()
                    if tok is None:
                        raise ValueError("unable to parse requirement: found 'end of string', expected: ')'")
                    i += 1
                    if tok == ")":
                        break
                    if tok == ",":
                        continue
                    _check_value(tok)
                    values.append(tok)
                reqs.append((key, op, tuple(values)))
            elif op in ("<", ">"):
                value = peek(2)
                try:
                    int(value)
                except (TypeError, ValueError):
                    raise ValueError("unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer") from None
                reqs.append((key, "gt" if op == ">" else "lt", (value,)))
                i += 3
            else:
                raise ValueError("unable to parse requirement: found %r, expected: in, notin, =, ==, !=, gt, lt" % op)
        if i < len(toks):
            if toks[i] != ",":
                raise ValueError("unable to parse requirement: found %r, expected: ','" % toks[i])
            i += 1
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for key, op, values in reqs:
        have = key in labels
        value = labels.get(key)
        if op == "=" and not (have and value == values[0]):
            return False
        if op == "!=" and have and value == values[0]:
            return False
        if op == "in" and not (have and value in values):
            return False
        if op == "notin" and have and value in values:
            return False
        if op == "exists" and not have:
            return False
        if op == "!" and have:
            return False
        if op in ("gt", "lt"):
            try:
                number = int(value)
            except (TypeError, ValueError):
                return False
            if op == "gt" and not number > int(values[0]):
                return False
            if op == "lt" and not number < int(values[0]):
                return False
    return True


def parse_field_selector(text, supported):
    """A list of (field, negate, value); `supported` are the field labels of the resource."""
    reqs = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        m = re.match(r"^([^=!]+)(==|=|!=)(.*)$", part)
        if not m:
            raise ValueError("invalid selector: '%s'; can't understand '%s'" % (text, part))
        field, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        if field not in supported:
            raise ValueError('field label not supported: %s' % field)
        reqs.append((field, op == "!=", value))
    return reqs


def field_value(obj, path):
    """The string a field selector compares: missing fields read as ""; booleans as "true"."""
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def fields_match(reqs, obj):
    for field, negate, value in reqs:
        if (field_value(obj, field) == value) == negate:
            return False
    return True
