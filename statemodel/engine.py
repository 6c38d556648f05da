"""The engine: ``Engine.apply(event) -> decisions``, ``Engine.state()``, ``Engine.hash``.

The only public surface of the pure core (STYLE.md).  It routes each event to the state of its
cluster, drops duplicate ids, and keeps one hash chain per cluster (DESIGN.md "Determinism
rules"):

    h_n = SHA-256(h_{n-1} || canonical(event_n) || 0x0a || canonical(decisions_n) [|| 0x0a || afs_n])

where ``canonical`` is JSON with sorted keys and no whitespace, so the same events give the same
chain whatever their key order or spacing, on any machine; ``afs_n`` is the canonical text of the
admission-fair-sharing ledgers the event changed (decimal values as exact strings), so the chain
also covers the decayed usage.  ``Engine.hash`` combines the
per-cluster chains in cluster-name order.  Rejected and duplicate events are counted but do not
enter the chain.
"""

from __future__ import annotations

import hashlib

import orjson

from statemodel.cluster import ClusterState
from statemodel.decisions import Decision
from statemodel.errors import EventError
from statemodel.events.envelope import Event
from statemodel.state_view import render_state
from statemodel.version import ENGINE_VERSION

_GENESIS = hashlib.sha256(b"quotaledger/" + ENGINE_VERSION.encode()).digest()


class Engine:
    """Deterministic reducer over EVENTS.md v1 events, for any number of clusters."""

    def __init__(self) -> None:
        self.clusters: dict[str, ClusterState] = {}
        self.chains: dict[str, bytes] = {}
        self._seen: dict[str, set[str]] = {}
        self.applied = 0
        self.rejected = 0
        self.duplicates = 0

    def apply(self, event: Event) -> list[Decision]:
        """Apply one validated event; returns the decisions it caused (``[]`` for a duplicate id).

        Raises:
            EventError: the cluster's quota model refuses the event as upstream's validating webhooks
                would (``ClusterState.validate``); nothing changed, the caller counts a rejection.


        A ``Batch`` is one step: its inner events are applied in order and admission runs once after
        the last; inner ids count as seen, and an inner duplicate is skipped.
        """
        name = event.cluster
        seen = self._seen.get(name)
        if seen is None:
            seen = self._seen[name] = set()
            self.clusters[name] = ClusterState(name)
            self.chains[name] = _GENESIS
        if event.id in seen:
            self.duplicates += 1
            return []
        self.clusters[name].validate(event)
        seen.add(event.id)
        if event.type == "Batch":
            inner = []
            for sub in event.events:
                if sub.id in seen:
                    self.duplicates += 1
                    continue
                seen.add(sub.id)
                inner.append(sub)
            if len(inner) != len(event.events):
                event = Event(event.id, event.time_ms, name, "Batch", event.canonical, events=tuple(inner))
        cluster = self.clusters[name]
        decisions = cluster.apply(event)
        self.applied += 1
        body = orjson.dumps([d.to_json() for d in decisions], option=orjson.OPT_SORT_KEYS) if decisions else b"[]"
        fair_sharing = cluster.afs.take_changes()
        if fair_sharing:
            body += b"\n" + fair_sharing
        self.chains[name] = hashlib.sha256(self.chains[name] + event.canonical + b"\n" + body).digest()
        return decisions

    def reject(self, event_id: str | None, error: EventError) -> None:
        """Count an event that failed validation (it changes nothing else)."""
        self.rejected += 1

    @property
    def hash(self) -> str:
        """Hex digest over every cluster's chain, in cluster-name order."""
        digest = hashlib.sha256(_GENESIS)
        for name in sorted(self.chains):
            digest.update(name.encode() + b"\0" + self.chains[name])
        return digest.hexdigest()

    def state(self) -> dict:
        """The state JSON (``statemodel.state_view``; docs/events.md "State"), JSON-ready."""
        return render_state(self)
