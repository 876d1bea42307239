#!/usr/bin/env python3
"""A fault layer in front of moto's EC2: what EC2 does that moto does not, for Tessera's tests.

moto (getmoto/moto, `moto_server`, version 5.2.1 here) is an independent emulator of the EC2
Query API: it keeps instances, tags, filters and paging the way EC2 does, and Tessera's own code
had no hand in it. Where it stops short of EC2, this proxy stands between the client and moto,
forwards every EC2 call and changes what it must. Python 3 standard library only.

    ec2_fault_proxy.py --start-moto --port-file FILE [--verify-key AKID --verify-secret SECRET]
    ec2_fault_proxy.py --moto-url http://127.0.0.1:5123 --port 8080
    ... --tls-cert CERT.pem --tls-key KEY.pem --tls-port-file FILE   (also serve HTTPS)

With --tls-cert/--tls-key a second port serves the same over HTTPS (one state for both), for
the client's TLS path. One listening port serves three things, told apart by path:
  POST /                       EC2 Query API (Action=...), forwarded to moto
  /latest/...                  the instance metadata service (IMDSv2) of one instance
  /fault/...                   the control endpoint below (JSON bodies, JSON replies)

Control (each POST answers {"ok": true} or 400 with {"error": ...}):
  /fault/reset        {}                                  faults, counters and moto's state cleared
  /fault/capacity     {"instance_type", "availability_zone"?, "available"}
                      at most `available` more instances of that type (in that zone, or in any
                      zone when none is given); a launch whose MinCount does not fit gets
                      InsufficientInstanceCapacity, one that fits launches up to MaxCount
  /fault/throttle     {"every": N, "actions"?: [...]}     every Nth EC2 call (of those actions)
                      gets RequestLimitExceeded; N = 0 stops it
  /fault/spot_price   {"instance_type", "availability_zone"?, "price": "1.2345"}
                      DescribeSpotPriceHistory reports this price; a spot RunInstances whose
                      MaxPrice is below it gets SpotMaxPriceTooLow
  /fault/pending      {"seconds": S}                      new instances stay pending S seconds
  /fault/interrupt    {"instance_id", "action"?: "terminate"|"stop"|"hibernate",
                       "notice_seconds"?: 120}            schedule a spot interruption: the
                      notice appears at once, in the instance's IMDS (spot/instance-action) and
                      in its spot request (DescribeSpotInstanceRequests status code
                      marked-for-termination, -stop or -hibernation by action, updateTime now);
                      EC2 acts after notice_seconds (the proxy then terminates or stops the
                      instance in moto, and closes or disables its spot request)
  /fault/imds         {"instance_id"}                     the instance whose metadata /latest/
                      serves (an IMDS belongs to one machine)
  /fault/imds_role    {"role", "access_key_id", "secret_access_key", "token"?, "expiration"?}
                      the instance role whose temporary keys IMDSv2 serves at
                      /latest/meta-data/iam/security-credentials/[<role>]
  /fault/join         {"kube_url", "token", "ca", "never_join"?: [types], "seconds"?: 0,
                       "node_types"?: {type: {"capacity": {...}, "labels": {...}}}}
                      play each instance's boot (a kubelet stand-in): once an instance is running
                      (and `seconds` after launch), register a Ready Node for it with the fake
                      Kubernetes API server, named by its private DNS name and labelled
                      tessera.io/ec2-instance-id; instances of the `never_join` types never do.
                      A Node has 4 CPUs and 16Gi, or for a type in `node_types` the capacity
                      (also its allocatable) and extra labels given there: what the instance's
                      kubelet, NVIDIA device plugin (nvidia.com/gpu) and GPU feature discovery
                      (nvidia.com/gpu.product) would report.
                      The Node of an instance that is terminated is deleted (as EKS's cloud node
                      lifecycle controller does). {"kube_url": ""} stops it.
  GET /fault/stats    calls per action, throttled, capacity_errors, idempotent_replays,
                      signature_failures

What the proxy adds to moto, and where both still differ from EC2:
  - MaxCount: moto launches MinCount instances; EC2 launches as many as it can up to MaxCount.
    The proxy rewrites the request so moto launches min(MaxCount, capacity left).
  - ClientToken: moto stores it but launches again on a repeat. The proxy answers a repeat with
    the same parameters with the first reply, and a repeat with other parameters with
    IdempotentParameterMismatch, as EC2 does; EC2 keeps tokens for at least 7 days, the proxy
    for its lifetime.
  - Capacity is unlimited in moto; here it is a count per type (and zone) that the tests set.
    EC2's real capacity is unknowable in advance and changes by the minute.
  - Throttling: EC2 throttles by token buckets per account and action; here by call count, so
    tests are deterministic.
  - Prices: moto reports 0.00001 for everything; here a set price per type/zone, constant until
    changed. Real spot prices move slowly and differ per zone.
  - Pending: moto instances are running at once; here they can stay pending for a while, in
    RunInstances and DescribeInstances replies alike (an instance-state-name filter is applied
    to the rewritten state within each page, so a page can come back shorter than MaxResults).
  - Interruptions: moto has none (its spot/instance-action answers 500); here a notice per
    instance, served by IMDSv2 (token required: PUT /latest/api/token with a TTL of 1..21600 s,
    then X-aws-ec2-metadata-token; without one, 401, as on an instance with httpTokens=required).
    Real notices come two minutes ahead (none for hibernate) and EC2 may act sooner; rebalance
    recommendations are not modelled.
  - Signatures: moto never checks them. With --verify-key/--verify-secret the proxy recomputes
    SigV4 itself (hashlib/hmac, written from AWS's description, independent of the C++ signer)
    and refuses a mismatch with AuthFailure (HTTP 401), so every test call is also a signing test.
  - The `instance-lifecycle` filter fails with HTTP 500 in moto; the proxy takes it out of the
    request and applies it to each page itself (values as EC2's: "spot"; on-demand instances
    have no lifecycle and match no value), so such a page can also come back short.
  - Joining: a real instance boots its image and user data, and its kubelet registers in minutes
    (or never: a bad image, a wrong bootstrap token, no route to the API server); here the
    proxy registers the Node itself, 0.2 s after the instance runs, with no kubelet, no
    heartbeats and the capacity of the instance type as moto describes it.
  - Instance role credentials: served as IMDS serves them (Code, AccessKeyId, SecretAccessKey,
    Token, Expiration); real ones rotate about every hour.
  - Spot requests: EC2 makes one for each instance of a spot RunInstances; moto 5.2.1 makes
    none (it keeps only those of RequestSpotInstances: after a spot RunInstances its
    DescribeSpotInstanceRequests answers an empty spotInstanceRequestSet). The proxy makes them
    and answers DescribeSpotInstanceRequests itself: per spot instance launched through it, a
    request (sir-…) active/fulfilled, marked-for-termination|stop|hibernation from an
    interruption's notice (updateTime the notice's time), closed (one-time) or disabled with
    instance-terminated-no-capacity / instance-stopped-no-capacity once the interruption acted,
    closed with instance-terminated-by-user after TerminateInstances; SpotInstanceRequestId.N,
    the filters instance-id, spot-instance-request-id, state, status-code and type (another
    filter is refused with InvalidParameterValue), MaxResults 5..1000 and NextToken paging.
    Where both still differ from EC2: moto's own RequestSpotInstances requests are not listed;
    a persistent request is not fulfilled again; status messages are the proxy's wording; a
    closed request stays until reset (EC2 deletes it four hours later); DescribeInstances shows
    no spotInstanceRequestId.
  - Still as moto has it: DescribeInstances pages by reservation, not by instance.
  - Error replies have EC2's shape: <Response><Errors><Error><Code/><Message/></Error></Errors>
    <RequestID/></Response>. HTTP status: InsufficientInstanceCapacity 500 (AWS lists it among
    server errors), RequestLimitExceeded 503 (as we remember botocore's EC2 retry rule; not
    checked against a source here, and the C++ client decides by code, not status),
    SpotMaxPriceTooLow and IdempotentParameterMismatch 400, AuthFailure 401.
"""

import argparse
import hashlib
import hmac
import http.client
import http.server
import json
import os
import secrets
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
import xml.etree.ElementTree as ET

EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15"
ET.register_namespace("", EC2_NS)


def error_xml(code, message):
    request_id = str(uuid.uuid4())
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
            '<Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>'
            % (code, xml_escape(message), request_id)).encode()


def xml_escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def local_name(tag):
    return tag.rsplit("}", 1)[-1]


def child(node, name):
    for element in node:
        if local_name(element.tag) == name:
            return element
    return None


def children(node, name):
    return [element for element in node if local_name(element.tag) == name]


def text_of(node, name):
    element = child(node, name) if node is not None else None
    return element.text or "" if element is not None else ""


def ec2_time(seconds):
    """EC2's timestamp form: UTC with milliseconds, "2026-12-07T23:10:00.250Z"."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".%03dZ" % (
        int(seconds * 1000) % 1000)


# The status codes of EC2's "Spot request status" for the notice, by interruption action, and
# for the request once EC2 has acted (its most common reason: capacity).
NOTICE_CODES = {"terminate": "marked-for-termination", "stop": "marked-for-stop",
                "hibernate": "marked-for-hibernation"}
ACTED_CODES = {"terminate": "instance-terminated-no-capacity",
               "stop": "instance-stopped-no-capacity", "hibernate": "instance-stopped-no-capacity"}
SPOT_REQUEST_FILTERS = {"instance-id": "instance_id", "spot-instance-request-id": "id",
                        "state": "state", "status-code": "code", "type": "type"}


def elements_xml(fields):
    return "".join("<%s>%s</%s>" % (name, xml_escape(value), name) for name, value in fields
                   if value)


def spot_request_xml(request):
    # spotPrice: the MaxPrice asked for; without one EC2 shows the on-demand price, which the
    # proxy does not know, so it leaves the element out.
    body = elements_xml([("spotInstanceRequestId", request["id"]),
                         ("spotPrice", request["spot_price"]), ("type", request["type"]),
                         ("state", request["state"])])
    body += ("<status><code>%s</code><updateTime>%s</updateTime><message>%s</message></status>"
             % (request["code"], request["update_time"], xml_escape(request["message"])))
    body += ("<launchSpecification><imageId>%s</imageId><instanceType>%s</instanceType>"
             "<placement><availabilityZone>%s</availabilityZone></placement>"
             "</launchSpecification>" % (xml_escape(request["image_id"]),
                                          xml_escape(request["instance_type"]),
                                          xml_escape(request["zone"])))
    fields = [("instanceId", request["instance_id"]), ("createTime", request["create_time"]),
              ("productDescription", "Linux/UNIX"), ("launchedAvailabilityZone", request["zone"]),
              ("instanceInterruptionBehavior", request["behavior"])]
    return "<item>" + body + elements_xml(fields) + "</item>"


# SigV4, recomputed from AWS's description (docs.aws.amazon.com/IAM/latest/UserGuide/
# create-signed-request.html) for the requests the C++ client sends: path "/", no query.
def sigv4_expected(method, path, query, headers, body, secret, authorization):
    fields = dict(part.strip().split("=", 1) for part in
                  authorization[len("AWS4-HMAC-SHA256 "):].split(","))
    signed = fields["SignedHeaders"].split(";")
    scope = fields["Credential"].split("/", 1)[1]
    date, region, service, _ = scope.split("/")
    lowered = {}
    for name, value in headers:
        lowered.setdefault(name.lower(), []).append(" ".join(value.split()))

    def enc(s):
        return urllib.parse.quote(s, safe="-_.~")

    pairs = sorted((enc(k), enc(v)) for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True))
    canonical = "\n".join([
        method,
        urllib.parse.quote(path, safe="/-_.~"),
        "&".join("%s=%s" % kv for kv in pairs),
        "".join("%s:%s\n" % (name, ",".join(lowered.get(name, []))) for name in signed),
        ";".join(signed),
        hashlib.sha256(body).hexdigest(),
    ])
    amz_date = lowered.get("x-amz-date", [""])[0]
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return fields["Credential"].split("/", 1)[0], hmac.new(
        key, to_sign.encode(), hashlib.sha256).hexdigest(), fields.get("Signature", "")


class Faults:
    """Everything the control endpoint sets, and the proxy's own records. One lock for all."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.capacity = {}          # (type, zone or None) -> instances still available
        self.throttle_every = 0
        self.throttle_actions = None
        self.throttle_counter = 0
        self.spot_prices = {}       # (type, zone or None) -> "price"
        self.pending_seconds = 0.0
        self.launched_at = {}       # instance id -> time.monotonic() at launch
        self.interruptions = {}     # instance id -> {"action", "time", "due"}
        self.spot_requests = {}     # instance id -> its spot request (see SpotRequests below)
        self.imds_instance = None
        self.imds_tokens = {}       # token -> expiry (monotonic)
        self.client_tokens = {}     # token -> (params without the token, reply body)
        self.imds_role = None       # {"role", "access_key_id", ...}
        self.join = None            # {"kube_url", "token", "ca", "never_join", "seconds"}
        self.joined = {}            # instance id -> node name registered
        self.stats = {"calls": {}, "throttled": 0, "capacity_errors": 0,
                      "idempotent_replays": 0, "signature_failures": 0}

    def capacity_key(self, instance_type, zone):
        if (instance_type, zone) in self.capacity:
            return (instance_type, zone)
        if (instance_type, None) in self.capacity:
            return (instance_type, None)
        return None

    def spot_price(self, instance_type, zone):
        return self.spot_prices.get((instance_type, zone), self.spot_prices.get((instance_type, None)))


class Proxy(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, moto_url, verify_key, verify_secret, faults=None):
        super().__init__(address, Handler)
        parsed = urllib.parse.urlparse(moto_url)
        self.moto_host, self.moto_port = parsed.hostname, parsed.port
        self.verify_key, self.verify_secret = verify_key, verify_secret
        self.faults = faults or Faults()

    def start_joiner(self):
        if getattr(self, "joiner", None) is None:
            self.joiner = threading.Thread(target=self.join_loop, daemon=True)
            self.joiner.start()

    def join_loop(self):
        while True:
            time.sleep(0.2)
            with self.faults.lock:
                join = self.faults.join
                if join is None:
                    continue
            try:
                self.join_once(join)
            except Exception as problem:  # the next round tries again
                if os.environ.get("EC2_FAULT_PROXY_LOG"):
                    sys.stderr.write("ec2_fault_proxy: join: %r\n" % (problem,))

    def join_once(self, join):
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Authorization":
                   "AWS4-HMAC-SHA256 Credential=AKIDPROXY/20260101/us-east-1/ec2/aws4_request"}
        body = urllib.parse.urlencode({"Action": "DescribeInstances", "Version": "2016-11-15"})
        status, reply, _ = self.moto("POST", "/", body.encode(), headers)
        if status != 200:
            return
        root = ET.fromstring(reply)
        now = time.monotonic()
        wanted, gone = {}, []
        for reservation in children(child(root, "reservationSet"), "item"):
            for item in children(child(reservation, "instancesSet"), "item"):
                instance_id = text_of(item, "instanceId")
                state = text_of(child(item, "instanceState"), "name")
                with self.faults.lock:
                    launched = self.faults.launched_at.get(instance_id, 0)
                    pending = now - launched < max(self.faults.pending_seconds,
                                                   float(join.get("seconds", 0)))
                    known = instance_id in self.faults.joined
                if state != "running":
                    if known:
                        gone.append(instance_id)
                    continue
                if known or pending or text_of(item, "instanceType") in join.get("never_join", []):
                    continue
                wanted[instance_id] = item
        for instance_id, item in wanted.items():
            name = text_of(item, "privateDnsName") or instance_id
            tags = {text_of(t, "key"): text_of(t, "value")
                    for t in children(child(item, "tagSet"), "item")}
            shape = join.get("node_types", {}).get(text_of(item, "instanceType"), {})
            capacity = dict(shape.get("capacity", {"cpu": "4", "memory": "16Gi"}))
            labels = {
                "tessera.io/ec2-instance-id": instance_id,
                "node.kubernetes.io/instance-type": text_of(item, "instanceType"),
                "topology.kubernetes.io/zone": text_of(child(item, "placement"), "availabilityZone"),
                "tessera.io/node-group": tags.get("tessera:node-group", "")}
            labels.update(shape.get("labels", {}))
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                    "status": {"capacity": capacity, "allocatable": dict(capacity),
                               "conditions": [{"type": "Ready", "status": "True"}]}}
            if self.kube(join, "POST", "/api/v1/nodes", node) in (200, 201, 409):
                with self.faults.lock:
                    self.faults.joined[instance_id] = name
        for instance_id in gone:
            with self.faults.lock:
                name = self.faults.joined.pop(instance_id, None)
            if name:
                self.kube(join, "DELETE", "/api/v1/nodes/" + name, None)

    def kube(self, join, method, path, body):
        url = urllib.parse.urlparse(join["kube_url"])
        context = ssl.create_default_context(cafile=join.get("ca")) if url.scheme == "https" else None
        connection = (http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=10)
                      if context else http.client.HTTPConnection(url.hostname, url.port, timeout=10))
        try:
            connection.request(method, path, body=json.dumps(body).encode() if body else None,
                               headers={"Authorization": "Bearer " + join["token"],
                                        "Content-Type": "application/json"})
            reply = connection.getresponse()
            reply.read()
            return reply.status
        finally:
            connection.close()

    def moto(self, method, path, body=b"", headers=None):
        connection = http.client.HTTPConnection(self.moto_host, self.moto_port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            reply = connection.getresponse()
            return reply.status, reply.read(), reply.getheader("Content-Type", "text/xml")
        finally:
            connection.close()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Proxy

    def log_message(self, fmt, *args):
        if os.environ.get("EC2_FAULT_PROXY_LOG"):
            sys.stderr.write("ec2_fault_proxy: " + fmt % args + "\n")

    def send(self, status, body, content_type="text/xml;charset=UTF-8", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, status, value):
        self.send(status, json.dumps(value).encode(), "application/json")

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    # -- routing ---------------------------------------------------------------------------

    def do_GET(self):
        if self.path.startswith("/latest/"):
            return self.imds_get()
        if self.path == "/fault/stats":
            with self.server.faults.lock:
                return self.send_json(200, self.server.faults.stats)
        self.send(404, b"not found", "text/plain")

    def do_PUT(self):
        if self.path == "/latest/api/token":
            return self.imds_token()
        self.send(404, b"not found", "text/plain")

    def do_POST(self):
        body = self.body()
        if self.path.startswith("/fault/"):
            try:
                return self.control(self.path[len("/fault/"):], json.loads(body or b"{}"))
            except (KeyError, ValueError, TypeError) as problem:
                return self.send_json(400, {"error": "%s: %s" % (type(problem).__name__, problem)})
        if self.path.split("?", 1)[0] == "/":
            return self.ec2(body)
        self.send(404, b"not found", "text/plain")

    # -- control ---------------------------------------------------------------------------

    def control(self, what, request):
        faults = self.server.faults
        with faults.lock:
            if what == "reset":
                faults.reset()
                self.server.moto("POST", "/moto-api/reset")
            elif what == "capacity":
                faults.capacity[(request["instance_type"], request.get("availability_zone"))] = \
                    int(request["available"])
            elif what == "throttle":
                faults.throttle_every = int(request["every"])
                faults.throttle_actions = request.get("actions")
                faults.throttle_counter = 0
            elif what == "spot_price":
                price = str(request["price"])
                float(price)
                faults.spot_prices[(request["instance_type"], request.get("availability_zone"))] = price
            elif what == "pending":
                faults.pending_seconds = float(request["seconds"])
            elif what == "interrupt":
                action = request.get("action", "terminate")
                if action not in ("terminate", "stop", "hibernate"):
                    raise ValueError("action must be terminate, stop or hibernate")
                notice = float(request.get("notice_seconds", 120))
                due = time.time() + notice
                faults.interruptions[request["instance_id"]] = {
                    "action": action, "due": due,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(due))}
                spot_request = faults.spot_requests.get(request["instance_id"])
                if spot_request is not None:
                    spot_request.update(
                        code=NOTICE_CODES[action], update_time=ec2_time(time.time()),
                        message="Spot Instance is marked for %s." % {
                            "terminate": "termination", "stop": "stop",
                            "hibernate": "hibernation"}[action])
            elif what == "imds":
                faults.imds_instance = request["instance_id"]
            elif what == "imds_role":
                str(request["role"]), str(request["access_key_id"]), str(request["secret_access_key"])
                faults.imds_role = dict(request)
            elif what == "join":
                faults.join = dict(request) if request.get("kube_url") else None
                faults.joined = {} if faults.join else faults.joined
                if faults.join:
                    self.server.start_joiner()
            else:
                return self.send_json(404, {"error": "no fault named " + what})
        self.send_json(200, {"ok": True})

    # -- instance metadata (IMDSv2) --------------------------------------------------------

    def imds_token(self):
        self.body()
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
        if ttl is None or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            return self.send(400, b"", "text/plain")
        token = secrets.token_urlsafe(32)
        with self.server.faults.lock:
            self.server.faults.imds_tokens[token] = time.monotonic() + int(ttl)
        self.send(200, token.encode(), "text/plain",
                  [("X-aws-ec2-metadata-token-ttl-seconds", ttl)])

    def imds_get(self):
        faults = self.server.faults
        token = self.headers.get("X-aws-ec2-metadata-token", "")
        with faults.lock:
            expiry = faults.imds_tokens.get(token)
            if expiry is None or expiry < time.monotonic():
                return self.send(401, b"", "text/plain")
            if self.path == "/latest/meta-data/instance-id" and faults.imds_instance:
                return self.send(200, faults.imds_instance.encode(), "text/plain")
            role = faults.imds_role
            if role and self.path == "/latest/meta-data/iam/security-credentials/":
                return self.send(200, role["role"].encode(), "text/plain")
            if role and self.path == "/latest/meta-data/iam/security-credentials/" + role["role"]:
                return self.send(200, json.dumps({
                    "Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": role["access_key_id"],
                    "SecretAccessKey": role["secret_access_key"], "Token": role.get("token", ""),
                    "Expiration": role.get("expiration", time.strftime(
                        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)))}).encode(),
                    "text/plain")
            if self.path == "/latest/meta-data/spot/instance-action":
                notice = faults.interruptions.get(faults.imds_instance)
                if notice is None:
                    return self.send(404, b"", "text/plain")
                return self.send(200, json.dumps({"action": notice["action"],
                                                  "time": notice["time"]}).encode(),
                                 "text/plain")
        self.send(404, b"", "text/plain")

    # -- EC2 -------------------------------------------------------------------------------

    def ec2(self, body):
        faults = self.server.faults
        params = urllib.parse.parse_qsl(body.decode(), keep_blank_values=True)
        query = dict(params)
        action = query.get("Action", "")
        if self.server.verify_secret:
            problem = self.check_signature(body)
            if problem:
                with faults.lock:
                    faults.stats["signature_failures"] += 1
                return self.send(401, error_xml("AuthFailure", problem))
        with faults.lock:
            faults.stats["calls"][action] = faults.stats["calls"].get(action, 0) + 1
            self.act_on_due_interruptions()
            if faults.throttle_every and (faults.throttle_actions is None or
                                          action in faults.throttle_actions):
                faults.throttle_counter += 1
                if faults.throttle_counter % faults.throttle_every == 0:
                    faults.stats["throttled"] += 1
                    return self.send(503, error_xml("RequestLimitExceeded", "Request limit exceeded."))
        if action == "RunInstances":
            return self.run_instances(params, query)
        if action == "DescribeSpotInstanceRequests":
            return self.describe_spot_requests(params, query)
        lifecycles = None
        if action == "DescribeInstances":
            params, lifecycles = take_filter(params, "instance-lifecycle")
            body = urllib.parse.urlencode(params).encode()
        status, reply, content_type = self.forward(body)
        if status == 200 and action == "TerminateInstances":
            self.spot_requests_terminated_by_user(params)
        if status == 200 and action == "DescribeInstances":
            reply = self.rewrite_instances(reply, query, lifecycles)
        elif status == 200 and action == "DescribeSpotPriceHistory":
            reply = self.rewrite_prices(reply)
        self.send(status, reply, content_type)

    def check_signature(self, body):
        authorization = self.headers.get("Authorization", "")
        if not authorization.startswith("AWS4-HMAC-SHA256 "):
            return "AWS was not able to validate the provided access credentials"
        path, _, query = self.path.partition("?")
        try:
            key, expected, given = sigv4_expected(
                self.command, path, query, list(self.headers.items()), body,
                self.server.verify_secret, authorization)
        except (KeyError, ValueError):
            return "AWS was not able to validate the provided access credentials"
        if key != self.server.verify_key:
            return "AWS was not able to validate the provided access credentials"
        if not hmac.compare_digest(expected, given):
            return ("The request signature we calculated does not match the signature you "
                    "provided.")
        return None

    def forward(self, body, headers=None):
        forwarded = headers or {name: value for name, value in self.headers.items()
                                if name.lower() not in ("host", "content-length", "connection")}
        return self.server.moto("POST", "/", body, forwarded)

    def act_on_due_interruptions(self):
        faults = self.server.faults
        now = time.time()
        for instance_id, notice in list(faults.interruptions.items()):
            if notice.get("done") or notice["due"] > now:
                continue
            notice["done"] = True
            action = "TerminateInstances" if notice["action"] == "terminate" else "StopInstances"
            body = urllib.parse.urlencode({"Action": action, "Version": "2016-11-15",
                                           "InstanceId.1": instance_id}).encode()
            self.forward(body, self.moto_headers())
            spot_request = faults.spot_requests.get(instance_id)
            if spot_request is not None:
                one_time = spot_request["type"] == "one-time"
                spot_request.update(
                    code=ACTED_CODES[notice["action"]], update_time=ec2_time(now),
                    state=("closed" if one_time else "open") if notice["action"] == "terminate"
                    else "disabled",
                    message="Spot Instance %s due to no Spot capacity available." % (
                        "terminated" if notice["action"] == "terminate" else "stopped"))

    def moto_headers(self):
        # moto picks the region from the credential scope; keep the caller's.
        return {"Content-Type": "application/x-www-form-urlencoded",
                "Authorization": self.headers.get("Authorization", "")}

    def run_instances(self, params, query):
        faults = self.server.faults
        token = query.get("ClientToken")
        without_token = sorted((k, v) for k, v in params if k != "ClientToken")
        instance_type = query.get("InstanceType", "m1.small")
        zone = query.get("Placement.AvailabilityZone")
        min_count, max_count = int(query.get("MinCount", "1")), int(query.get("MaxCount", "1"))
        with faults.lock:
            if token and token in faults.client_tokens:
                first_params, first_reply = faults.client_tokens[token]
                if first_params != without_token:
                    return self.send(400, error_xml(
                        "IdempotentParameterMismatch",
                        "The client token you have provided is associated with a resource "
                        "that is already deleted or has different parameters."))
                faults.stats["idempotent_replays"] += 1
                return self.send(200, first_reply)
            if query.get("InstanceMarketOptions.MarketType") == "spot":
                price = faults.spot_price(instance_type, zone)
                max_price = query.get("InstanceMarketOptions.SpotOptions.MaxPrice")
                if price is not None and max_price is not None and float(max_price) < float(price):
                    return self.send(400, error_xml(
                        "SpotMaxPriceTooLow",
                        "Your Spot request price of %s is lower than the minimum required Spot "
                        "request fulfillment price of %s." % (max_price, price)))
            count = max_count
            key = faults.capacity_key(instance_type, zone)
            if key is not None:
                available = faults.capacity[key]
                if available < min_count:
                    faults.stats["capacity_errors"] += 1
                    return self.send(500, error_xml(
                        "InsufficientInstanceCapacity",
                        "We currently do not have sufficient %s capacity in the Availability "
                        "Zone you requested (%s). Our system will be working on provisioning "
                        "additional capacity." % (instance_type, zone or "us-east-1a")))
                count = min(max_count, available)
                faults.capacity[key] = available - count
            forwarded = [(k, v) for k, v in params if k not in ("MinCount", "MaxCount")]
            forwarded += [("MinCount", str(count)), ("MaxCount", str(count))]
            status, reply, content_type = self.forward(urllib.parse.urlencode(forwarded).encode())
            if status == 200:
                root = ET.fromstring(reply)
                now = time.monotonic()
                for item in children(child(root, "instancesSet"), "item"):
                    faults.launched_at[text_of(item, "instanceId")] = now
                    if query.get("InstanceMarketOptions.MarketType") == "spot":
                        self.add_spot_request(item, query)
                reply = ET.tostring(root, encoding="utf-8", xml_declaration=True)
                if token:
                    faults.client_tokens[token] = (without_token, reply)
        self.send(status, reply, content_type)

    # -- spot requests (moto keeps none for RunInstances; see the header) -------------------

    def add_spot_request(self, item, query):
        """The spot request EC2 makes for a spot RunInstances: one per instance, fulfilled."""
        spot = "InstanceMarketOptions.SpotOptions."
        launched = ec2_time(time.time())
        self.server.faults.spot_requests[text_of(item, "instanceId")] = {
            "id": "sir-" + secrets.token_hex(4), "instance_id": text_of(item, "instanceId"),
            "state": "active", "code": "fulfilled", "message": "Your spot request is fulfilled.",
            "update_time": launched, "create_time": launched,
            "type": query.get(spot + "SpotInstanceType", "one-time"),
            "behavior": query.get(spot + "InstanceInterruptionBehavior", "terminate"),
            "spot_price": query.get(spot + "MaxPrice", ""),
            "image_id": text_of(item, "imageId"), "instance_type": text_of(item, "instanceType"),
            "zone": text_of(child(item, "placement"), "availabilityZone")}

    def spot_requests_terminated_by_user(self, params):
        faults = self.server.faults
        with faults.lock:
            for key, instance_id in params:
                spot_request = faults.spot_requests.get(instance_id)
                if not key.startswith("InstanceId.") or spot_request is None:
                    continue
                if spot_request["state"] == "active":
                    spot_request.update(
                        code="instance-terminated-by-user", update_time=ec2_time(time.time()),
                        state="closed" if spot_request["type"] == "one-time" else "open",
                        message="Spot Instance terminated due to user-initiated termination.")

    def describe_spot_requests(self, params, query):
        """DescribeSpotInstanceRequests from the proxy's own records: SpotInstanceRequestId.N,
        the filters of SPOT_REQUEST_FILTERS, MaxResults (5..1000) and NextToken paging."""
        faults = self.server.faults
        ids = [value for key, value in params if key.startswith("SpotInstanceRequestId.")]
        filters = {}
        for key, name in params:
            parts = key.split(".")
            if len(parts) == 3 and parts[0] == "Filter" and parts[2] == "Name":
                prefix = "Filter.%s.Value." % parts[1]
                filters[name] = {v for k, v in params if k.startswith(prefix)}
        for name in filters:
            if name not in SPOT_REQUEST_FILTERS:
                return self.send(400, error_xml(
                    "InvalidParameterValue",
                    "The filter '%s' is not modelled by the fault proxy." % name))
        max_results = int(query.get("MaxResults", "0") or "0")
        if max_results and not 5 <= max_results <= 1000:
            return self.send(400, error_xml(
                "InvalidParameterValue",
                "Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 "
                "and 1000." % max_results))
        start = query.get("NextToken", "")
        if start and not start.isdigit():
            return self.send(400, error_xml("InvalidParameterValue",
                                            "Invalid value '%s' for NextToken." % start))
        with faults.lock:
            requests = list(faults.spot_requests.values())
            known = {request["id"] for request in requests}
            for request_id in ids:
                if request_id not in known:
                    return self.send(400, error_xml(
                        "InvalidSpotInstanceRequestID.NotFound",
                        "The spot instance request ID '%s' does not exist" % request_id))
            chosen = [request for request in requests
                      if (not ids or request["id"] in ids) and
                      all(request[SPOT_REQUEST_FILTERS[name]] in values
                          for name, values in filters.items())]
            first = int(start or "0")
            last = first + max_results if max_results else len(chosen)
            page = "".join(spot_request_xml(request) for request in chosen[first:last])
        more = "<nextToken>%d</nextToken>" % last if last < len(chosen) else ""
        self.send(200, ('<?xml version="1.0" encoding="UTF-8"?>\n'
                        '<DescribeSpotInstanceRequestsResponse xmlns="%s/"><requestId>%s'
                        '</requestId><spotInstanceRequestSet>%s</spotInstanceRequestSet>%s'
                        '</DescribeSpotInstanceRequestsResponse>'
                        % (EC2_NS, uuid.uuid4(), page, more)).encode())

    def rewrite_instances(self, reply, query, lifecycles=None):
        faults = self.server.faults
        wanted_states = None
        for name, value in query.items():
            if name.endswith(".Name") and name.startswith("Filter.") and value == "instance-state-name":
                prefix = name[:-len("Name")] + "Value."
                wanted_states = {v for k, v in query.items() if k.startswith(prefix)}
        root = ET.fromstring(reply)
        now = time.monotonic()
        with faults.lock:
            reservations = child(root, "reservationSet")
            for reservation in list(children(reservations, "item")) if reservations is not None else []:
                instances = child(reservation, "instancesSet")
                for item in list(children(instances, "item")):
                    launched = faults.launched_at.get(text_of(item, "instanceId"))
                    state = child(item, "instanceState")
                    if (launched is not None and now - launched < faults.pending_seconds and
                            text_of(state, "name") == "running"):
                        child(state, "code").text = "0"
                        child(state, "name").text = "pending"
                    if wanted_states is not None and text_of(state, "name") not in wanted_states:
                        instances.remove(item)
                    elif lifecycles is not None and text_of(item, "instanceLifecycle") not in lifecycles:
                        instances.remove(item)
                if not children(instances, "item"):
                    reservations.remove(reservation)
        return ET.tostring(root, encoding="utf-8", xml_declaration=True)

    def rewrite_prices(self, reply):
        faults = self.server.faults
        root = ET.fromstring(reply)
        with faults.lock:
            history = child(root, "spotPriceHistorySet")
            for item in children(history, "item") if history is not None else []:
                price = faults.spot_price(text_of(item, "instanceType"), text_of(item, "availabilityZone"))
                if price is not None:
                    child(item, "spotPrice").text = price
        return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def take_filter(params, name):
    """Removes Filter.N named `name` from the params (renumbering the rest); returns the params
    and that filter's values, or None when it was not there."""
    filters, others = {}, []
    for key, value in params:
        parts = key.split(".")
        if parts[0] == "Filter" and len(parts) >= 3 and parts[1].isdigit():
            filters.setdefault(int(parts[1]), []).append((".".join(parts[2:]), value))
        else:
            others.append((key, value))
    values, number = None, 0
    for index in sorted(filters):
        fields = filters[index]
        if ("Name", name) in fields:
            values = {value for field, value in fields if field.startswith("Value.")}
            continue
        number += 1
        others += [("Filter.%d.%s" % (number, field), value) for field, value in fields]
    return others, values


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port, process, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def write_port(path, port):
    with open(path + ".tmp", "w") as out:
        out.write(str(port))
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--moto-url", help="a running moto_server")
    parser.add_argument("--start-moto", action="store_true",
                        help="start moto_server on a free loopback port, stop it on exit")
    parser.add_argument("--moto-server", default="moto_server")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--port-file", help="write the listening port here once ready")
    parser.add_argument("--verify-key")
    parser.add_argument("--verify-secret")
    parser.add_argument("--tls-cert", help="PEM certificate: also serve HTTPS")
    parser.add_argument("--tls-key")
    parser.add_argument("--tls-port-file", help="write the HTTPS port here once ready")
    args = parser.parse_args()

    moto_process = None
    moto_url = args.moto_url
    if args.start_moto:
        port = free_port()
        moto_process = subprocess.Popen([args.moto_server, "-H", "127.0.0.1", "-p", str(port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_for_port(port, moto_process, 30):
            moto_process.kill()
            sys.exit("ec2_fault_proxy: moto_server did not start")
        moto_url = "http://127.0.0.1:%d" % port
    if not moto_url:
        sys.exit("ec2_fault_proxy: give --moto-url or --start-moto")

    server = Proxy(("127.0.0.1", args.port), moto_url, args.verify_key, args.verify_secret)
    if args.tls_cert:
        tls_server = Proxy(("127.0.0.1", 0), moto_url, args.verify_key, args.verify_secret,
                           server.faults)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        tls_server.socket = context.wrap_socket(tls_server.socket, server_side=True)
        threading.Thread(target=tls_server.serve_forever, daemon=True).start()
        if args.tls_port_file:
            write_port(args.tls_port_file, tls_server.server_address[1])
    if args.port_file:
        write_port(args.port_file, server.server_address[1])
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if moto_process:
            moto_process.terminate()
            moto_process.wait(5)


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    main()
