#!/usr/bin/python3
"""deploy/kubernetes/*.yaml checked without a cluster.

kubectl cannot validate offline (--dry-run=client still downloads the server's OpenAPI), and the
fake API server serves none of these kinds, so each document is read into the official Python
client's model of its kind (python3-kubernetes, generated from Kubernetes' OpenAPI schema) and
written back: a field the schema does not know (a typo) is dropped on the way and reported, and
a missing required field fails in the model's constructor. Then the RBAC rules are compared with
the verbs the backend's code uses, and the tesserad config in the ConfigMap is loaded by tesserad
itself (argv[1]) with the token placeholder replaced: it must get as far as the in-cluster
config, which only a pod has. Exits 77 (skipped) when python3-kubernetes or python3-yaml is
missing.
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import yaml
    from kubernetes import client
except ImportError as e:
    print("SKIP deploy_manifests: %s (Debian python3-kubernetes, python3-yaml)" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.join(HERE, "..", "..", "deploy", "kubernetes")
failures = []


def model_class(doc):
    version = doc["apiVersion"].split("/")[-1].capitalize()
    return getattr(client, "V1" + doc["kind"]) if version == "V1" else None


def dropped(original, written, path=""):
    """Keys of `original` that did not survive the round trip through the model."""
    out = []
    if isinstance(original, dict):
        for key, value in original.items():
            if not isinstance(written, dict) or key not in written:
                out.append(path + "." + key)
            else:
                out += dropped(value, written[key], path + "." + key)
    elif isinstance(original, list) and isinstance(written, list):
        for i, (a, b) in enumerate(zip(original, written)):
            out += dropped(a, b, "%s[%d]" % (path, i))
    return out


class Reply:
    def __init__(self, text):
        self.data = text


api = client.ApiClient()
documents = []
for path in sorted(glob.glob(os.path.join(DEPLOY, "*.yaml"))):
    for doc in yaml.safe_load_all(open(path)):
        if not doc:
            continue
        name = "%s %s/%s" % (os.path.basename(path), doc.get("kind"), doc["metadata"]["name"])
        klass = model_class(doc)
        if klass is None:
            failures.append(name + ": no v1 model for " + doc["apiVersion"])
            continue
        try:
            model = api.deserialize(Reply(json.dumps(doc)), klass.__name__)
        except ValueError as e:
            failures.append("%s: %s" % (name, e))
            continue
        lost = dropped(doc, api.sanitize_for_serialization(model))
        if lost:
            failures.append("%s: fields unknown to the schema: %s" % (name, ", ".join(lost)))
        documents.append((name, doc))
        print("ok   " + name)

kinds = {doc["kind"] for _, doc in documents}
for kind in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
             "PersistentVolumeClaim", "Deployment", "Service"):
    if kind not in kinds:
        failures.append("no " + kind + " in deploy/kubernetes")

# RBAC: exactly the verbs the backend uses (kubernetes_backend.cc, and the client's GET of a pod
# after a retried create or bind met 409).
expected = {("nodes", "list"), ("nodes", "watch"), ("pods", "get"), ("pods", "list"),
            ("pods", "watch"), ("pods", "create"), ("pods", "delete"),
            ("pods/binding", "create")}
granted = set()
for _, doc in documents:
    if doc["kind"] == "ClusterRole":
        for rule in doc["rules"]:
            granted |= {(r, v) for r in rule["resources"] for v in rule["verbs"]}
if granted != expected:
    failures.append("ClusterRole grants %s; the backend uses %s" % (sorted(granted), sorted(expected)))

# The Deployment: one writer of the store.
for _, doc in documents:
    if doc["kind"] == "Deployment":
        spec = doc["spec"]
        if spec.get("replicas") != 1 or spec.get("strategy", {}).get("type") != "Recreate":
            failures.append("Deployment: replicas must be 1 and strategy Recreate (one store writer)")

# The tesserad config in the ConfigMap, loaded by tesserad.
tesserad = sys.argv[1] if len(sys.argv) > 1 else None
plugins = sys.argv[2] if len(sys.argv) > 2 else None
config = next(doc["data"]["tesserad.yaml"] for _, doc in documents if doc["kind"] == "ConfigMap")
if tesserad and plugins:
    with tempfile.TemporaryDirectory() as tmp:
        text = re.sub(r"sha256: \S+", "sha256: " + "0" * 64, config)
        text = text.replace("/var/lib/tessera", tmp).replace("0.0.0.0:8080", "127.0.0.1:0")
        text = "plugin_dirs: [%s]\n" % plugins + text
        path = os.path.join(tmp, "tesserad.yaml")
        open(path, "w").write(text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        run = subprocess.run([tesserad, "--config", path], capture_output=True, text=True,
                             timeout=60, env=env)
        said = (run.stdout + run.stderr).strip()
        if "in-cluster config: KUBERNETES_SERVICE_HOST is not set" not in said:
            failures.append("tesserad with the ConfigMap's config (exit %d): %s" % (run.returncode, said))
        else:
            print("ok   the ConfigMap's tesserad.yaml loads up to the in-cluster config")
        placeholder = config.replace("/var/lib/tessera", tmp)
        open(path, "w").write(placeholder)
        run = subprocess.run([tesserad, "--config", path], capture_output=True, text=True, timeout=60)
        if "auth.tokens[0].sha256: must be 64 hex digits" not in run.stdout + run.stderr:
            failures.append("tesserad accepted the token placeholder: " + run.stdout + run.stderr)

for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
