"""The HTTP(S) front of the fake API server: TLS, authentication, routing, discovery, control.

A threaded HTTP/1.1 server with keep-alive (one thread per connection, TCP_NODELAY, each reply
written in one send). TLS is negotiated on the connection's own thread. Authentication: a
client certificate signed by the client CA (user = CN, groups = O), else `Authorization: Bearer`
with a token from the tokens file; anything else is 401 (kube-apiserver with
`--anonymous-auth=false`). Authorization: every authenticated user may do everything, except
users in the group `fake:read-only`, who get 403 for anything but get, list and watch.
Routes: the core group at /api/v1, named groups at /apis/<group>/<version>, the discovery
documents kubectl reads, /version, /healthz, /livez, /readyz, and the test controls under
/fake/ (see README.md). Thread safety: handlers share the Registry, the WatchHub and the
Kubelet, each safe for concurrent use; per-server settings are read-only after start.
"""

import json
import socket
import socketserver
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

from . import errors, protobuf, resources, tables
from .errors import ApiError
from .registry import Selector
from .resources import BINDINGS, JOBS, PODS
from .watch import serve_watch

READ_VERBS = {"get", "list", "watch"}
JOB_ORPHAN_WARNING = ('299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background '
                      'to remove them or set propagationPolicy=Orphan to suppress this warning"')


def _pb_field(number, payload):
    return bytes([number << 3 | 2, len(payload)]) + payload


# An OpenAPI v2 document (gnostic's openapi_v2.Document, protobuf, as kubectl asks for it) with
# no paths and no definitions: kubectl's client-side validation finds no schema for any kind and
# checks nothing, which is what the fake can honestly offer (it has no schemas).
OPENAPI_V2_EMPTY = _pb_field(1, b"2.0") + _pb_field(2, _pb_field(1, b"Kubernetes") + _pb_field(2, b"v1.32.0-fake"))


class Settings:
    def __init__(self, tokens=None, tls=None, bookmark_interval=5.0, watch_timeout=1800, verbose=False,
                 anonymous_admin=False):
        self.tokens = tokens or {}          # token -> (user, groups)
        self.tls = tls                      # ssl.SSLContext or None
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout  # seconds, when the client gives no timeoutSeconds
        self.verbose = verbose
        self.anonymous_admin = anonymous_admin  # plain-HTTP debugging: no credentials needed


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    allow_reuse_address = True

    def __init__(self, address, app):
        self.app = app
        super().__init__(address, _Handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, addr

    def finish_request(self, request, client_address):
        tls = self.app.settings.tls
        if tls is not None:
            try:
                request.settimeout(10)
                request = tls.wrap_socket(request, server_side=True)
                request.settimeout(None)
            except (ssl.SSLError, OSError):
                request.close()
                return
        try:
            _Handler(request, client_address, self)
        finally:
            try:
                request.close()
            except OSError:
                pass

    def shutdown_request(self, request):
        try:
            request.close()
        except OSError:
            pass


class App:
    """What the handlers share: the registry, the watch hub, the kubelet and the settings."""

    def __init__(self, registry, hub, kubelet, settings):
        self.registry = registry
        self.hub = hub
        self.kubelet = kubelet
        self.settings = settings
        self.requests = 0
        self._lock = threading.Lock()
        self.httpd = None

    def serve(self, host, port):
        self.httpd = _Server((host, port), self)
        thread = threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True)
        thread.start()
        return self.httpd.server_address[1]

    def shutdown(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"
    sys_version = ""

    def log_message(self, fmt, *args):
        if self.server.app.settings.verbose:
            super().log_message(fmt, *args)

    # ---- responses --------------------------------------------------------------------------

    def _send(self, code, body, content_type="application/json", headers=None):
        head = ["HTTP/1.1 %d %s" % (code, self.responses.get(code, ("",))[0]),
                "Content-Type: " + content_type,
                "Content-Length: %d" % len(body),
                "Cache-Control: no-cache, private",
                "Date: " + self.date_time_string()]
        for k, v in (headers or {}).items():
            head.append("%s: %s" % (k, v))
        if self.close_connection:
            head.append("Connection: close")
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        self.log_request(code, len(body))

    def send_json(self, code, obj, headers=None):
        self._send(code, json.dumps(obj, separators=(",", ":")).encode(), headers=headers)

    def start_chunked(self, code, content_type):
        head = ["HTTP/1.1 %d OK" % code, "Content-Type: " + content_type, "Transfer-Encoding: chunked",
                "Cache-Control: no-cache, private", "Date: " + self.date_time_string()]
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode())
        self.log_request(code)

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")

    # ---- request plumbing -------------------------------------------------------------------

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _json_body(self, raw):
        if not raw:
            return None
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if ctype == "application/vnd.kubernetes.protobuf":
            try:
                return protobuf.decode(raw)
            except (ValueError, IndexError) as e:
                raise ApiError(415, "UnsupportedMediaType", "fake apiserver: %s" % e) from None
        try:
            if ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
                return yaml.safe_load(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as e:
            raise errors.bad_request("the body of the request could not be decoded: %s" % e) from None

    def _authenticate(self):
        app = self.server.app
        if app.settings.tls is not None:
            cert = self.connection.getpeercert()
            if cert:
                subject = [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"]
                groups = [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "organizationName"]
                if subject:
                    return subject[0], groups
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            found = app.settings.tokens.get(auth[7:].strip())
            if found:
                return found
            raise errors.unauthorized()
        if app.settings.anonymous_admin:
            return "admin", ["system:masters"]
        raise errors.unauthorized()

    def _dispatch(self, method):
        app = self.server.app
        with app._lock:
            app.requests += 1
        try:
            raw = self._body()
            url = urllib.parse.urlsplit(self.path)
            query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
            user = self._authenticate()
            self._route(method, url.path, query, raw, user)
        except ApiError as e:
            self.send_json(e.code, e.status(), headers=e.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # a bug in the fake: answer 500, as kube-apiserver would, and say what
            import traceback
            traceback.print_exc()
            try:
                self.send_json(500, ApiError(500, "InternalError", "fake apiserver: %s: %s" % (type(e).__name__, e)).status())
            except OSError:
                self.close_connection = True

    # ---- routing ----------------------------------------------------------------------------

    def _route(self, method, path, query, raw, user):
        parts = [p for p in path.split("/") if p]
        if not parts:
            return self.send_json(200, {"paths": ["/api", "/api/v1", "/apis", "/apis/batch", "/apis/batch/v1",
                                                  "/apis/scheduling.k8s.io", "/apis/scheduling.k8s.io/v1",
                                                  "/healthz", "/livez", "/readyz", "/version"]})
        if parts[0] == "fake":
            return self._control(method, parts[1:], query, raw)
        if parts[0] in ("healthz", "livez", "readyz") and len(parts) == 1:
            return self._send(200, b"ok", "text/plain; charset=utf-8")
        if parts == ["openapi", "v2"]:
            return self._send(200, OPENAPI_V2_EMPTY, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
        if parts == ["version"]:
            return self.send_json(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-fake", "gitCommit": "",
                                        "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z",
                                        "goVersion": "go1.23", "compiler": "gc", "platform": "linux/amd64"})
        if parts[0] == "api":
            if len(parts) == 1:
                host = "127.0.0.1:%d" % self.server.server_address[1]
                return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs":
                                            [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]})
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis":
            if len(parts) == 1:
                return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                            "groups": [self._group(g) for g in ("batch", "scheduling.k8s.io")]})
            if len(parts) == 2:
                if parts[1] not in ("batch", "scheduling.k8s.io"):
                    raise self._not_served()
                return self.send_json(200, dict(self._group(parts[1]), kind="APIGroup", apiVersion="v1"))
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise self._not_served()
        if (group, version) not in resources.GROUPS:
            raise self._not_served()
        if not rest:
            if method != "GET":
                raise errors.method_not_allowed()
            gv = version if not group else "%s/%s" % (group, version)
            return self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                                        "resources": resources.discovery_resources(group, version)})
        watch_path = rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces" and (group != "" or rest[2] not in ("status", "finalize")):
            ns, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise self._not_served()
        res = resources.lookup(group, version, rest[0])
        if res is None:
            raise self._not_served()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if (res.namespaced and name is not None and ns is None) or (not res.namespaced and ns is not None):
            raise self._not_served()
        if sub is not None and sub not in res.subresources:
            raise self._not_served()
        verb = self._verb(method, name, sub, query, watch_path)
        self._authorize(user, verb, res, ns, name, sub)
        self._serve(verb, res, ns, name, sub, query, raw)

    @staticmethod
    def _group(name):
        gv = {"groupVersion": name + "/v1", "version": "v1"}
        return {"name": name, "versions": [gv], "preferredVersion": gv}

    @staticmethod
    def _not_served():
        return ApiError(404, "NotFound", "the server could not find the requested resource", {})

    @staticmethod
    def _verb(method, name, sub, query, watch_path):
        watch = watch_path or query.get("watch", "").lower() in ("1", "true")
        if method == "GET":
            if name is None:
                return "watch" if watch else "list"
            return "watch" if watch else "get"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "delete" if name is not None else "deletecollection"
        raise errors.method_not_allowed()

    def _authorize(self, user, verb, res, ns, name, sub):
        who, groups = user
        if "fake:read-only" in groups and verb not in READ_VERBS:
            what = res.name if not sub else "%s/%s" % (res.name, sub)
            target = '%s "%s"' % (res.name, name) if name else res.name
            where = ' in the namespace "%s"' % ns if ns else ""
            scope = "" if ns else " at the cluster scope"
            raise errors.forbidden('%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s"%s%s'
                                   % (target, who, verb, what, res.group, where, scope), res.group, res.name, name or "")

    def _serve(self, verb, res, ns, name, sub, query, raw):
        app = self.server.app
        reg = app.registry
        if verb not in res.verbs and not (sub and verb in ("get", "update", "patch", "create")):
            raise errors.method_not_allowed()
        as_table = tables.wants_table(self.headers.get("Accept"))
        if verb == "get":
            obj, _ = reg.get(res, ns, name)
            if as_table:
                return self.send_json(200, tables.table(res, [obj], {"resourceVersion": obj["metadata"]["resourceVersion"]}))
            return self.send_json(200, obj)
        if verb in ("list", "watch"):
            selector = Selector(res, query.get("labelSelector", ""), query.get("fieldSelector", ""))
            if verb == "watch":
                timeout = query.get("timeoutSeconds")
                try:
                    timeout = float(timeout) if timeout else app.settings.watch_timeout
                except ValueError:
                    raise errors.bad_request("timeoutSeconds must be a number") from None
                bookmarks = query.get("allowWatchBookmarks", "").lower() in ("1", "true")
                render = (lambda obj: tables.table(res, [obj])) if as_table else None
                return serve_watch(self, reg, app.hub, res, ns, selector, query.get("resourceVersion"), timeout,
                                   bookmarks, app.settings.bookmark_interval, render)
            try:
                limit = int(query.get("limit") or 0)
            except ValueError:
                raise errors.bad_request("limit must be an integer") from None
            lst = reg.list(res, ns, selector, limit, query.get("continue") or None, query.get("resourceVersion"))
            if as_table:
                return self.send_json(200, tables.table(res, lst["items"], lst["metadata"]))
            return self.send_json(200, lst)
        body = self._json_body(raw)
        if verb == "create":
            if res is BINDINGS:
                return self.send_json(201, reg.bind(ns, body))
            if sub == "binding":
                return self.send_json(201, reg.bind(ns, body, name))
            if sub == "eviction":
                return self.send_json(201, reg.evict(ns, name, body))
            if sub is not None or name is not None:
                raise errors.method_not_allowed()
            dry = query.get("dryRun") == "All"
            return self.send_json(201, reg.create(res, ns, body, dry_run=dry))
        if verb == "update":
            return self.send_json(200, reg.update(res, ns, name, body, sub))
        if verb == "patch":
            return self.send_json(200, reg.patch(res, ns, name, self.headers.get("Content-Type"), raw, sub))
        if verb in ("delete", "deletecollection"):
            options = dict(body or {})
            for key in ("gracePeriodSeconds",):
                if key in query:
                    try:
                        options[key] = int(query[key])
                    except ValueError:
                        raise errors.bad_request("%s must be an integer" % key) from None
            if "propagationPolicy" in query:
                options["propagationPolicy"] = query["propagationPolicy"]
            if "orphanDependents" in query:
                options["orphanDependents"] = query["orphanDependents"].lower() == "true"
            headers = {}
            if res is JOBS and options.get("propagationPolicy") is None and options.get("orphanDependents") is None:
                headers["Warning"] = JOB_ORPHAN_WARNING
            if verb == "deletecollection":
                selector = Selector(res, query.get("labelSelector", ""), query.get("fieldSelector", ""))
                return self.send_json(200, reg.delete_collection(res, ns, selector, options), headers)
            obj, deleted = reg.delete(res, ns, name, options)
            if deleted and not res.return_deleted:
                return self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                            "details": {"name": name, "group": res.group, "kind": res.name,
                                                        "uid": obj["metadata"].get("uid")}}, headers)
            return self.send_json(200, obj, headers)
        raise errors.method_not_allowed()

    # ---- test controls ----------------------------------------------------------------------

    def _control(self, method, parts, query, raw):
        app = self.server.app
        what = "/".join(parts)
        if what == "compact" and method == "POST":
            _, revision = app.registry.etcd.get(b"/registry/")
            app.registry.etcd.compact(revision)
            expired = app.hub.expire_all("The resourceVersion for the provided watch is too old.")
            return self.send_json(200, {"revision": revision, "watchesExpired": expired})
        if what == "expire-watches" and method == "POST":
            expired = app.hub.expire_all("The resourceVersion for the provided watch is too old.")
            return self.send_json(200, {"watchesExpired": expired})
        if what == "evict" and method == "POST":
            if not query.get("namespace") or not query.get("name"):
                raise errors.bad_request("/fake/evict needs ?namespace=&name=")
            pod = app.kubelet.evict(query["namespace"], query["name"],
                                    query.get("message") or "The node was low on resource: memory.")
            return self.send_json(200, pod)
        if what == "stats" and method == "GET":
            return self.send_json(200, {"requests": app.requests, "watches": app.hub.count(),
                                        "kubelet": app.kubelet.stats()})
        raise self._not_served()
