"""API errors as kube-apiserver writes them: a `Status` body with code, reason and message.

Every failure the fake answers goes through ApiError, so the body always has the shape clients
parse: {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":...,
"reason":...,"details":{...},"code":...}. The constructors below give the messages kube-apiserver
uses, word for word where clients match on them.
"""


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _qualified(group, resource):
    return resource if not group else "%s.%s" % (resource, group)


def not_found(group, resource, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (_qualified(group, resource), name),
                    {"name": name, "group": group, "kind": resource})


def already_exists(group, resource, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (_qualified(group, resource), name),
                    {"name": name, "group": group, "kind": resource})


def conflict(group, resource, name, why):
    return ApiError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": %s' % (_qualified(group, resource), name, why),
                    {"name": name, "group": group, "kind": resource})


def modified_conflict(group, resource, name):
    return conflict(group, resource, name,
                    "the object has been modified; please apply your changes to the latest version and try again")


def invalid(group, kind, name, causes):
    """causes: list of (field, reason, message) with reason FieldValueRequired,
    FieldValueInvalid, FieldValueForbidden, FieldValueNotSupported, FieldValueDuplicate."""
    text = ", ".join("%s: %s" % (field, msg) for field, _, msg in causes)
    if len(causes) > 1:
        text = "[%s]" % text
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (kind, name, text),
                    {"name": name, "group": group, "kind": kind,
                     "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes]})


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def expired(message):
    return ApiError(410, "Expired", message)


def gone(message):
    return ApiError(410, "Gone", message)


def unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(message, group="", resource="", name=""):
    details = {"group": group, "kind": resource}
    if name:
        details["name"] = name
    return ApiError(403, "Forbidden", message, details)


def method_not_allowed(message="the server does not allow this method on the requested resource"):
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type):
    return ApiError(415, "UnsupportedMediaType", 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json' if content_type else "missing content type")
