"""``quotaledger watch``: list + watch a Kubernetes cluster and send its objects as events.

I/O side of ``streams.kube`` (the translation is ``streams.kube.translate``, pure):

1. **Initial sync.** Every kind without a saved resourceVersion (``--state``) is listed, in the
   order of ``streams.kube.kinds``; the differences against the objects the state file knows (all
   of them on a first run) go out as ONE ``Batch`` (split only past the Batch limits, see
   ``Translator.batches``), so admission runs once after the whole cluster is known.  A kind
   whose list answers 404 (its CRD is not installed) is skipped with one warning line.
2. **Watch.** One thread per kind watches from its resourceVersion (``allowWatchBookmarks``;
   bookmarks only move the resourceVersion) and puts the watch events on one queue; the main
   thread translates them in arrival order and writes the lines.  A re-delivered object version
   gives nothing (``Translator.watch_event``).  A closed or failed watch is opened again from the
   last resourceVersion (failures back off 1 s doubling to 30 s, each reported on one line).
3. **410 Gone** (an HTTP 410 answer, or a watch ``ERROR`` event with code 410): the kind is listed
   again and the differences against its last known objects go out as one ``Batch``; the watch
   resumes from the list's resourceVersion.
4. **Resume.** After the lines are flushed, the state file is written (at most every
   ``state_every`` seconds, and at the end): the resourceVersion and objects per kind, and the
   event clock.

The HTTP requests go through the official client's ``ApiClient`` (kubeconfig, contexts, in-cluster
service account, TLS and token refresh as the client implements them); the bodies are read as
JSON without the client's model classes, so every kind, built-in or custom, is handled alike and
objects are sent exactly as served.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from streams.kube import state as state_file
from streams.kube.kinds import KindSpec
from streams.kube.sink import Sink
from streams.kube.translate import ADDED, DELETED, MODIFIED, EventClock, Translator, resource_version

MAX_BATCH_EVENTS = 10_000
"""Inner events of one ``Batch`` at most (docs/events.md "Limits")."""

DEFAULT_MAX_BATCH_BYTES = 900_000
"""JSON bytes of one ``Batch`` about at most: below Kafka's default 1 MiB record size."""


LIST_PAGE_SIZE = 500
"""Objects per list request (client-go's pager default)."""
LIST_RESTARTS = 3
"""How many times a list whose continue token expired starts over before it gives up."""


class KubeApiError(RuntimeError):
    """The API server answered an error (the message names the request and the server's reason)."""


class NotInstalled(KubeApiError):
    """The kind's API is not served (HTTP 404: its CRD is not installed)."""


class Gone(KubeApiError):
    """The resourceVersion is too old (HTTP 410 or a watch ``ERROR`` with code 410): relist."""


def load_client(kubeconfig: str | None = None, context: str | None = None):
    """An ``ApiClient`` of the official ``kubernetes`` package.

    In-cluster configuration (the pod's service account) when neither ``kubeconfig`` nor
    ``context`` is given and ``$KUBERNETES_SERVICE_HOST`` is set; else the kubeconfig file
    (``kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``) and its ``context`` (default:
    the current context).

    Raises:
        kubernetes.config.ConfigException: the configuration cannot be loaded.
    """
    from kubernetes import client, config

    cfg = client.Configuration()
    if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=cfg)
    else:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    return client.ApiClient(cfg)


class KubeApi:
    """List and watch requests of one ``ApiClient`` (JSON bodies, no model classes).

    Args:
        api_client: ``kubernetes.client.ApiClient``.
        watch_timeout: ``timeoutSeconds`` of a watch (the server closes it then; it is reopened).
        page_size: ``limit`` of each list request: a list is read in pages of that many objects,
            following ``metadata.continue``, as client-go's pager does (0: one request).
    """

    def __init__(self, api_client, watch_timeout: int = 300, page_size: int = LIST_PAGE_SIZE) -> None:
        self.api_client = api_client
        self.watch_timeout = watch_timeout
        self.page_size = page_size
        self._open: set = set()
        self._lock = threading.Lock()

    def _request(self, spec: KindSpec, params: list[tuple[str, str]], read_timeout: float):
        method, url, headers, _, _ = self.api_client.param_serialize(
            "GET", spec.path, query_params=params, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        resp = self.api_client.call_api(method, url, headers, _request_timeout=(10, read_timeout))
        if resp.status == 404:
            resp.read()
            raise NotInstalled(f"{spec.path}: 404 Not Found (is the {spec.kind} CRD installed?)")
        if resp.status == 410:
            resp.read()
            raise Gone(f"{spec.path}: 410 Gone")
        if resp.status >= 400:
            body = resp.read()
            raise KubeApiError(f"GET {spec.path}: HTTP {resp.status}: {_status_message(body)}")
        return resp

    def list(self, spec: KindSpec) -> tuple[list[dict], str | None]:
        """``(items, list resourceVersion)`` of every object of ``spec`` (all namespaces), read in
        pages of ``page_size`` objects that all come from the first page's snapshot (the API
        server's ``continue`` semantics).  A continue token that expired (``410``, the server
        compacted that snapshot away) restarts the list from the beginning, at most
        ``LIST_RESTARTS`` times.

        Raises:
            NotInstalled / KubeApiError: the server answered 404 / another error; ``Gone`` when
                every restart expired too.
        """
        for _ in range(LIST_RESTARTS):
            items: list[dict] = []
            rv: str | None = None
            token: str | None = None
            try:
                while True:
                    params = [("limit", str(self.page_size))] if self.page_size else []
                    if token is not None:
                        params.append(("continue", token))
                    resp = self._request(spec, params, 60)
                    body = orjson.loads(resp.read())
                    page = body.get("items") if isinstance(body, dict) else None
                    meta = body.get("metadata") if isinstance(body, dict) else None
                    meta = meta if isinstance(meta, dict) else {}
                    items.extend(i for i in page or [] if isinstance(i, dict))
                    if token is None:
                        version = meta.get("resourceVersion")
                        rv = version if isinstance(version, str) and version else None
                    following = meta.get("continue")
                    if not (isinstance(following, str) and following):
                        return items, rv
                    token = following
            except Gone:
                if token is None:
                    raise
        raise Gone(f"{spec.path}: the list's continue token expired {LIST_RESTARTS} times")

    def watch(self, spec: KindSpec, rv: str | None) -> Iterator[dict]:
        """The watch events of ``spec`` from ``rv`` (decoded JSON lines) until the server ends the
        watch or ``close_all`` is called.

        Raises:
            NotInstalled / Gone / KubeApiError: as ``list``; ``Gone`` also for an ``ERROR`` event of
                code 410; other ``ERROR`` events raise ``KubeApiError``.
        """
        params = [("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(self.watch_timeout))]
        if rv is not None:
            params.append(("resourceVersion", rv))
        resp = self._request(spec, params, self.watch_timeout + 30)
        raw = resp.response
        with self._lock:
            self._open.add(raw)
        try:
            buf = b""
            for chunk in raw.stream(65536, decode_content=True):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield _checked(spec, orjson.loads(line))
            if buf.strip():
                yield _checked(spec, orjson.loads(buf))
        finally:
            with self._lock:
                self._open.discard(raw)
            raw.release_conn()

    def close_all(self) -> None:
        """Interrupt every open watch (its thread sees the stream end)."""
        with self._lock:
            for raw in list(self._open):
                raw.shutdown()


def _status_message(body: bytes) -> str:
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:200].decode("utf-8", "replace")
    if isinstance(status, dict):
        return f"{status.get('reason')}: {status.get('message')}"
    return str(status)[:200]


def _checked(spec: KindSpec, event: object) -> dict:
    if not isinstance(event, dict):
        raise KubeApiError(f"watch {spec.path}: not a watch event: {str(event)[:200]}")
    if event.get("type") == "ERROR":
        status = event.get("object") if isinstance(event.get("object"), dict) else {}
        if status.get("code") == 410:
            raise Gone(f"watch {spec.path}: 410 {status.get('reason')}: {status.get('message')}")
        raise KubeApiError(f"watch {spec.path}: ERROR {status.get('code')} {status.get('reason')}: "
                           f"{status.get('message')}")
    return event


@dataclass
class WatchSummary:
    """What one run did.

    Attributes:
        events: envelopes written (a ``Batch`` counts as one).
        batches: ``Batch`` envelopes among them (initial sync and relists).
        relists: ``410 Gone`` relists.
        skipped: kinds skipped because their API is not served.
    """

    events: int = 0
    batches: int = 0
    relists: int = 0
    skipped: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for stderr."""
        text = f"watch: {self.events} events written ({self.batches} batches, {self.relists} relists)"
        if self.skipped:
            text += f"; skipped (not served): {', '.join(self.skipped)}"
        return text


class Watcher:
    """One cluster's list + watch loop (module docstring).

    Args:
        api: the ``KubeApi``.
        kinds: the kinds to watch, in initial-sync order (``streams.kube.kinds.kinds_for``).
        cluster: the cluster name of every event.
        sink: where the lines go.
        state_path: the resume file (``None``: nothing is kept between runs).
        warn: prints one line (warnings, retries).
        state_every: seconds between two writes of the state file while running.
        max_batch_bytes: JSON bytes of one ``Batch`` about at most.
        now_ms: the receive-time clock (ms since the epoch).

    Raises (constructor):
        StateFileError: the state file is unreadable or of another cluster.
    """

    def __init__(self, api: KubeApi, kinds: list[KindSpec], cluster: str, sink: Sink,
                 state_path: Path | None = None, warn: Callable[[str], None] = lambda _: None,
                 state_every: float = 2.0, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
                 now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000) -> None:
        self.api = api
        self.kinds = kinds
        self.sink = sink
        self.state_path = state_path
        self.state = state_file.load(state_path, cluster) if state_path is not None else state_file.WatchState(cluster)
        self.translator = Translator(cluster, EventClock(self.state.clock_ms))
        self.warn = warn
        self.state_every = state_every
        self.max_batch_bytes = max_batch_bytes
        self.now_ms = now_ms
        self.summary = WatchSummary()
        self._queue: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []

    # -- output --------------------------------------------------------------------------------

    def _write(self, events: list[dict]) -> None:
        for event in events:
            self.sink.write(orjson.dumps(event))
            self.summary.events += 1
            if event["type"] == "Batch":
                self.summary.batches += 1

    def _commit(self) -> None:
        """Flush the output, then record the state (module docstring, point 4)."""
        self.sink.flush()
        if self.state_path is not None:
            self.state.clock_ms = self.translator.clock.last_ms
            state_file.save(self.state_path, self.state)

    def _batched(self, prefix: str, events: list[dict]) -> list[dict]:
        return self.translator.batches(prefix, events, MAX_BATCH_EVENTS, self.max_batch_bytes)

    # -- the run -------------------------------------------------------------------------------

    def sync(self) -> list[KindSpec]:
        """The initial sync (module docstring, point 1); returns the kinds to watch.

        Raises:
            KubeApiError: a list failed other than by 404.
        """
        events: list[dict] = []
        watched = []
        for spec in self.kinds:
            kind = self.state.kind(spec.name)
            if kind.version in spec.fallbacks:  # listed at a fallback version before: keep it
                spec = spec.at(kind.version)
            if kind.resource_version is None:
                listed = self._list_first_served(spec)
                if listed is None:
                    continue
                spec, items, rv = listed
                diff, kind.objects = self.translator.relist(spec, kind.objects, items, self.now_ms())
                kind.resource_version, kind.version = rv, spec.version
                events.extend(diff)
            watched.append(spec)
        self._write(self._batched("sync", events))
        self._commit()
        return watched

    def _list_first_served(self, spec: KindSpec) -> tuple[KindSpec, list[dict], str | None] | None:
        """List ``spec`` at its version, else at each fallback version; ``None`` (and one warning
        line) when none is served."""
        problems = []
        for candidate in (spec, *(spec.at(v) for v in spec.fallbacks)):
            try:
                items, rv = self.api.list(candidate)
            except NotInstalled as exc:
                problems.append(str(exc))
                continue
            return candidate, items, rv
        self.warn(f"warning: skipping {spec.kind} ({spec.group or 'core'}): {'; '.join(problems)}")
        self.summary.skipped.append(spec.name)
        return None

    def run(self, stop: threading.Event, once: bool = False, exit_when_idle: float | None = None) -> WatchSummary:
        """Sync, then watch until ``stop`` is set (or, with ``once``, right after the sync; with
        ``exit_when_idle``, once no watch event arrived for that many seconds).

        Raises:
            KubeApiError: the initial sync failed.
            OSError / ProduceError: the output or the state file failed (the state file then
                still describes what was written before).
        """
        watched = self.sync()
        if once:
            return self.summary
        for spec in watched:
            thread = threading.Thread(target=self._watch_kind, args=(spec, self.state.kind(spec.name).resource_version,
                                                                      stop), name=f"watch-{spec.name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        failed = True
        try:
            self._loop(stop, exit_when_idle)
            failed = False
        finally:
            stop.set()
            self.api.close_all()
            for thread in self._threads:
                thread.join(timeout=2)
            if not failed:  # after a failed flush the state must not claim what was not delivered
                self._commit()
        return self.summary

    def _loop(self, stop: threading.Event, exit_when_idle: float | None) -> None:
        last_event = last_save = time.monotonic()
        dirty = False
        while not stop.is_set():
            try:
                item = self._queue.get(timeout=0.2)
            except queue.Empty:
                now = time.monotonic()
                if dirty and now - last_save >= self.state_every:
                    self._commit()
                    last_save, dirty = now, False
                if exit_when_idle is not None and now - last_event >= exit_when_idle:
                    return
                continue
            last_event = time.monotonic()
            self._handle(item)
            dirty = True
            if self._queue.empty():
                self.sink.flush()
                if last_event - last_save >= self.state_every:
                    self._commit()
                    last_save, dirty = last_event, False

    def _handle(self, item: tuple) -> None:
        what, spec = item[0], item[1]
        kind = self.state.kind(spec.name)
        if what == "event":
            _, _, wtype, obj = item
            self._write(self.translator.watch_event(spec, wtype, obj, kind.objects, self.now_ms()))
            kind.resource_version = resource_version(obj) or kind.resource_version
        elif what == "bookmark":
            kind.resource_version = item[2]
        elif what == "relist":
            _, _, items, rv = item
            diff, kind.objects = self.translator.relist(spec, kind.objects, items, self.now_ms())
            kind.resource_version = rv
            self.summary.relists += 1
            self._write(self._batched(f"relist:{spec.name}", diff))
        elif what == "warn":
            self.warn(item[2])

    def _watch_kind(self, spec: KindSpec, rv: str | None, stop: threading.Event) -> None:
        """One kind's watch thread: events, bookmarks and relists go to the queue (module docstring)."""
        backoff = 1.0
        relist = False
        while not stop.is_set():
            try:
                if relist:
                    items, rv = self.api.list(spec)
                    self._queue.put(("relist", spec, items, rv))
                    relist = False
                for event in self.api.watch(spec, rv):
                    wtype, obj = event.get("type"), event.get("object")
                    if not isinstance(obj, dict):
                        continue
                    if wtype == "BOOKMARK":
                        rv = resource_version(obj) or rv
                        self._queue.put(("bookmark", spec, rv))
                    elif wtype in (ADDED, MODIFIED, DELETED):
                        rv = resource_version(obj) or rv
                        self._queue.put(("event", spec, wtype, obj))
                    backoff = 1.0
            except Gone as exc:
                self._queue.put(("warn", spec, f"watch {spec.kind}: {exc}; relisting"))
                relist = True
            except Exception as exc:  # noqa: BLE001 - any failure of one watch is retried, never fatal
                if stop.is_set():
                    return
                self._queue.put(("warn", spec, f"watch {spec.kind}: {type(exc).__name__}: {exc}; "
                                               f"retrying in {backoff:.0f}s"))
                if stop.wait(backoff):
                    return
                backoff = min(backoff * 2, 30.0)
