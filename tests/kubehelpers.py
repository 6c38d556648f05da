"""An in-process Kubernetes API for the ``quotaledger watch`` tests: kmock's ``KubernetesEmulator``
(a real HTTP server speaking the Kubernetes list / watch / create / patch / delete protocol) on a
loopback port, run by its own event loop in a thread, so the watcher talks to it through the
official ``kubernetes`` client exactly as to a cluster (a kubeconfig file points at it).

kmock keeps objects as given: it does not assign ``metadata.uid`` / ``resourceVersion`` and ignores
``resourceVersion`` on a watch (every watch first replays the objects that exist).  ``FakeApi``
therefore plays the API server's part of that: each create / patch / delete carries a uid and the
next resourceVersion of a global counter, as a real server would send them.  A ``410 Gone`` is
served by a kmock reaction on watch requests resuming from a given resourceVersion
(``expire``): the watch answers one ``ERROR`` event of code 410, as the API server does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import kmock

from streams.kube.kinds import KindSpec


class FakeApi:
    """A kmock Kubernetes API on ``url``; a context manager (``with FakeApi(kinds) as api``).

    Args:
        kinds: the kinds it serves (others answer 404, as without their CRD).
    """

    def __init__(self, kinds: list[KindSpec]) -> None:
        self.kinds = kinds
        self._rv = itertools.count(1)
        self._uid = itertools.count(1)
        self.url = ""
        self.emulator: kmock.KubernetesEmulator | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self.last_rv = "0"

    def __enter__(self) -> FakeApi:
        ready = threading.Event()

        async def serve() -> None:
            async with kmock.KubernetesEmulator() as emulator, kmock.Server(emulator) as server:
                for spec in self.kinds:
                    emulator.resources[f"{spec.group}/{spec.version}/{spec.plural}".lstrip("/")] = {}
                self.emulator, self.url = emulator, str(server.url).rstrip("/")
                self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
                ready.set()
                await self._stop.wait()

        self._thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("kmock server did not start")
        return self

    def __exit__(self, *exc) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        assert self._thread is not None
        self._thread.join(10)

    def kubeconfig(self, path: Path, context: str = "test") -> Path:
        """Write a kubeconfig whose ``context`` points at this server; returns ``path``."""
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": "kmock", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": "t"}}],
            "contexts": [{"name": context, "context": {"cluster": "kmock", "user": "tester"}}],
        }))
        return path

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        req = urllib.request.Request(self.url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path}: {exc.code} {exc.read()[:300]!r}") from None

    def _next_rv(self) -> str:
        self.last_rv = str(next(self._rv))
        return self.last_rv

    @staticmethod
    def _item_path(spec: KindSpec, obj_meta: dict) -> str:
        ns = obj_meta.get("namespace")
        if spec.namespaced and ns:
            base = spec.path.replace(f"/{spec.plural}", f"/namespaces/{ns}/{spec.plural}")
        else:
            base = spec.path
        return f"{base}/{obj_meta['name']}"

    def create(self, spec: KindSpec, obj: dict) -> dict:
        """Create ``obj`` (given ``metadata.name`` / ``namespace``) with a new uid and resourceVersion."""
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("uid", f"uid-{next(self._uid)}")
        meta["resourceVersion"] = self._next_rv()
        full = {"apiVersion": spec.api_version, "kind": spec.kind, **obj, "metadata": meta}
        ns = meta.get("namespace")
        path = spec.path.replace(f"/{spec.plural}", f"/namespaces/{ns}/{spec.plural}") if ns else spec.path
        return self._call("POST", path, full)

    def patch(self, spec: KindSpec, meta: dict, patch: dict) -> dict:
        """Merge ``patch`` into the object named by ``meta`` (``name``, ``namespace``), with the next
        resourceVersion."""
        body = {**patch, "metadata": {**(patch.get("metadata") or {}), "resourceVersion": self._next_rv()}}
        return self._call("PATCH", self._item_path(spec, meta), body)

    def delete(self, spec: KindSpec, meta: dict) -> dict:
        """Delete the object named by ``meta`` (kmock's DELETED event carries its last version)."""
        return self._call("DELETE", self._item_path(spec, meta))

    def expire(self, spec: KindSpec, rv: str) -> None:
        """From now on, a watch of ``spec`` resuming from ``rv`` answers ``ERROR`` 410 Expired."""
        assert self.emulator is not None
        resource = kmock.resource(spec.group, spec.version, spec.plural)

        def resumes_from_rv(request: kmock.Request) -> bool:
            return request.params.get("resourceVersion") == rv

        self.emulator[kmock.action.WATCH, resource, resumes_from_rv] << (
            {"type": "ERROR", "object": {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 410,
                                         "reason": "Expired", "message": f"too old resource version: {rv}"}},)

    def watch_requests(self, spec: KindSpec) -> list[dict[str, str]]:
        """The query parameters of every watch request of ``spec`` served so far."""
        assert self.emulator is not None
        resource = kmock.resource(spec.group, spec.version, spec.plural)
        return [dict(r.params) for r in self.emulator[kmock.action.WATCH, resource]]

    def wait_watching(self, kinds: list[KindSpec], timeout: float = 15.0) -> None:
        """Wait until a watch request of each of ``kinds`` has arrived (so later changes reach the
        open watches in resourceVersion order, not kmock's replay of existing objects)."""
        deadline = time.monotonic() + timeout
        while not all(self.watch_requests(spec) for spec in kinds):
            if time.monotonic() > deadline:
                raise AssertionError(f"no watch request of {[s.kind for s in kinds]} within {timeout}s")
            time.sleep(0.02)
