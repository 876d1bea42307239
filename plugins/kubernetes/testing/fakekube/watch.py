"""Watches: one etcd watch per client watch, turned into Kubernetes watch events.

A watch starts at a resourceVersion: without one (or "0") the current objects come first as
ADDED and the stream goes on from the list's revision; with one, etcd replays from RV+1, and an
RV older than etcd's compaction point is refused with HTTP 410 Expired before the stream starts.
Each etcd event becomes ADDED, MODIFIED or DELETED after the selectors: an object that stops
matching is sent as DELETED, one that starts matching as ADDED (as k8s.io/apiserver's etcd3
watcher does). BOOKMARK events (with allowWatchBookmarks) carry the newest revision up to which
every change of the resource has been seen, every `bookmark_interval` seconds. A watch ends at
timeoutSeconds (or the server's default), when the client goes away, or with an ERROR event
holding a 410 Expired Status: when etcd reports the watch's revision compacted, or when a test
calls WatchHub.expire_all() (/fake/compact), as kube-apiserver ends watches whose revision fell
out of its watch cache. Thread safety: a Watch runs on the server thread that serves it; the
WatchHub's set of running watches is guarded by a lock.
"""

import json
import queue
import select
import ssl
import threading
import time

from . import errors
from .etcd_store import Compacted
from .registry import decode


class WatchHub:
    def __init__(self):
        self._lock = threading.Lock()
        self._watches = set()

    def add(self, w):
        with self._lock:
            self._watches.add(w)

    def remove(self, w):
        with self._lock:
            self._watches.discard(w)

    def expire_all(self, message):
        with self._lock:
            watches = list(self._watches)
        for w in watches:
            w.events.put(("expire", message))
        return len(watches)

    def count(self):
        with self._lock:
            return len(self._watches)


def serve_watch(handler, registry, hub, res, ns, selector, rv, timeout, bookmarks, bookmark_interval, render=None):
    """Writes one watch response on `handler` (a BaseHTTPRequestHandler); `render` turns each
    event's object into what is sent (a Table for kubectl)."""
    render = render or (lambda obj: obj)
    etcd = registry.etcd
    prefix = res.prefix(ns)
    initial = []
    if rv in (None, "", "0"):
        lst = registry.list(res, ns, selector)
        start = int(lst["metadata"]["resourceVersion"])
        for obj in lst["items"]:
            obj["kind"], obj["apiVersion"] = res.kind, res.api_version
            initial.append(("ADDED", obj))
    else:
        try:
            start = int(rv)
        except ValueError:
            raise errors.bad_request("invalid resource version: %s" % rv) from None
        try:
            etcd.check_revision(prefix, start)
        except Compacted:
            current = etcd.get(b"/registry/")[1]
            raise errors.expired("too old resource version: %d (%d)" % (start, current)) from None
        except Exception:  # a future revision: etcd waits for it, so does the watch
            pass
    ew = etcd.watch(prefix, start + 1)
    hub.add(ew)
    try:
        handler.start_chunked(200, "application/json")
        last_rev = start
        for kind, obj in initial:
            handler.write_chunk(_line(kind, render(obj)))
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + bookmark_interval
        sock = handler.connection
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            wait = min(deadline - now, 1.0, max(next_bookmark - now, 0.0) if bookmarks else 1.0)
            try:
                item = ew.events.get(timeout=max(wait, 0.001))
            except queue.Empty:
                item = None
            if item is None:
                if bookmarks and time.monotonic() >= next_bookmark:
                    handler.write_chunk(_line("BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version,
                                                           "metadata": {"resourceVersion": str(last_rev)}}))
                    next_bookmark = time.monotonic() + bookmark_interval
                elif _client_gone(sock):
                    return
                continue
            if item[0] == "events":
                _, header_rev, events = item
                out = []
                for ev in events:
                    converted = _convert(ev, selector)
                    if converted:
                        out.append(_line(converted[0], render(converted[1])))
                if out:
                    handler.write_chunk(b"".join(out))
                last_rev = max(last_rev, header_rev)
            elif item[0] in ("compacted", "expire"):
                message = item[1] if item[0] == "expire" else "too old resource version: %d (%d)" % (last_rev, item[1])
                status = errors.expired(message).status()
                handler.write_chunk(_line("ERROR", status))
                break
            else:  # closed
                break
        handler.end_chunked()
    except (BrokenPipeError, ConnectionResetError, OSError):
        handler.close_connection = True
    finally:
        hub.remove(ew)
        ew.cancel()


def _line(kind, obj):
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _convert(ev, selector):
    """An etcd event -> (type, object) after the selector, or None."""
    old = decode(ev.prev_kv, ev.kv.mod_revision) if ev.prev_kv.key else None
    if ev.type == 1:  # DELETE
        if old is not None and selector.matches(old):
            return "DELETED", old
        return None
    cur = decode(ev.kv)
    cur_ok = selector.matches(cur)
    old_ok = old is not None and selector.matches(old)
    if cur_ok and old_ok:
        return "MODIFIED", cur
    if cur_ok:
        return "ADDED", cur
    if old_ok:
        return "DELETED", old
    return None


def _client_gone(sock):
    """True once the client has closed its end (a watch client sends nothing more on the
    connection, so reading here loses nothing)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        sock.setblocking(False)
        try:
            return sock.recv(1) == b""
        except (ssl.SSLWantReadError, BlockingIOError):
            return False
        finally:
            sock.setblocking(True)
    except (OSError, ValueError):
        return True
