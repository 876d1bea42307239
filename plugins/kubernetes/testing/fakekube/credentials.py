"""Certificates, tokens and kubeconfigs for the fake API server.

make_pki() writes, with the `openssl` command (Debian's openssl), a CA, a serving certificate for
127.0.0.1 and localhost signed by it, and client certificates (CN = user name, O = groups), as
kube-apiserver's `--client-ca-file` expects them. The tokens file has kube-apiserver's
`--token-auth-file` format: `token,user,uid,"group1,group2"` per line. write_kubeconfig() writes
a kubeconfig with three contexts: `fake` (client certificate, inline `-data` fields; the
current context), `fake-token` (inline bearer token) and `fake-tokenfile` (`tokenFile` and a
`certificate-authority` path instead of data).
"""

import base64
import csv
import io
import os
import secrets
import subprocess

import yaml


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_pki(directory, users=(("admin", ("system:masters",)), ("viewer", ("fake:read-only",)))):
    """Writes ca.{crt,key}, server.{crt,key} and <user>.{crt,key} under `directory`."""
    os.makedirs(directory, exist_ok=True)
    d = directory
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "3650", "-subj", "/CN=fake-kubernetes-ca", cwd=d)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n"
                "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=kube-apiserver", cwd=d)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.crt", "-days", "3650", "-extfile", "server.ext", cwd=d)
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n")
    for user, groups in users:
        make_client_cert(d, user, groups)


def make_client_cert(directory, user, groups=(), ca="ca"):
    subject = "/CN=%s" % user + "".join("/O=%s" % g for g in groups)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", user + ".key", "-out", user + ".csr",
             "-subj", subject, cwd=directory)
    _openssl("x509", "-req", "-in", user + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-CAcreateserial",
             "-out", user + ".crt", "-days", "3650", "-extfile", "client.ext", cwd=directory)


def write_tokens(path, entries):
    """entries: (token, user, uid, groups)."""
    with open(path, "w") as f:
        for token, user, uid, groups in entries:
            f.write('%s,%s,%s,"%s"\n' % (token, user, uid, ",".join(groups)))


def read_tokens(path):
    """{token: (user, [groups])} from a --token-auth-file."""
    out = {}
    with open(path) as f:
        for row in csv.reader(io.StringIO(f.read())):
            if not row or row[0].startswith("#"):
                continue
            if len(row) < 3:
                raise ValueError("%s: a line needs token,user,uid[,\"groups\"]: %r" % (path, row))
            groups = [g for g in row[3].split(",") if g] if len(row) > 3 else []
            out[row[0]] = (row[1], groups)
    return out


def new_token():
    return secrets.token_hex(16)


def _b64(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def write_kubeconfig(path, server, ca_file=None, client_cert=None, client_key=None, token=None, token_file=None):
    cluster = {"server": server}
    if ca_file:
        cluster["certificate-authority-data"] = _b64(ca_file)
    clusters = [{"name": "fake", "cluster": cluster}]
    users, contexts = [], []
    if client_cert:
        users.append({"name": "fake-cert", "user": {"client-certificate-data": _b64(client_cert),
                                                    "client-key-data": _b64(client_key)}})
        contexts.append({"name": "fake", "context": {"cluster": "fake", "user": "fake-cert", "namespace": "default"}})
    if token:
        users.append({"name": "fake-token", "user": {"token": token}})
        contexts.append({"name": "fake-token", "context": {"cluster": "fake", "user": "fake-token", "namespace": "default"}})
    if token_file:
        by_path = {"server": server}
        if ca_file:
            by_path["certificate-authority"] = os.path.abspath(ca_file)
        clusters.append({"name": "fake-files", "cluster": by_path})
        users.append({"name": "fake-tokenfile", "user": {"tokenFile": os.path.abspath(token_file)}})
        contexts.append({"name": "fake-tokenfile", "context": {"cluster": "fake-files", "user": "fake-tokenfile",
                                                              "namespace": "default"}})
    if not contexts:
        contexts.append({"name": "fake", "context": {"cluster": "fake", "namespace": "default"}})
        users.append({"name": "anonymous", "user": {}})
    config = {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users, "contexts": contexts,
              "current-context": contexts[0]["name"], "preferences": {}}
    with open(path, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    os.chmod(path, 0o600)
