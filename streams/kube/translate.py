"""Watch events → event envelopes (docs/events.md), as pure functions: no I/O, no wall clock (the
caller passes the receive time), deterministic output for the same input.

**Ids** (docs/events.md "Kubernetes source"): ``<uid>@<resourceVersion>:<what>`` with ``<what>`` one
of ``applied``, ``deleted``, ``admitted``, ``evicted``, ``finished``.  The same object version
always gives the same id, so a watch event delivered twice (a reconnect, a restart from an older
saved resourceVersion) is a duplicate for the engine, not a second event.  An object without
``metadata.uid`` uses ``<Kind>/<ns/name>`` instead; one without ``metadata.resourceVersion`` uses
``sha256-`` and 16 hex digits of its canonical JSON.  A ``Batch`` of a relist is
``relist:<plural.group>:<digest of its inner ids>``, the initial sync ``sync:<digest>``.

**Time** (``EventClock``): the time an event derives from its object —

- a lifecycle event: ``lastTransitionTime`` of the condition that made it (``Finished``,
  ``Evicted`` or ``QuotaReserved``);
- ``Deleted``: ``metadata.deletionTimestamp``;
- ``Applied``: the latest ``metadata.managedFields[].time`` (the last write), and for an object
  seen for the first time also its ``creationTimestamp`` (the later of the two);

— else the watcher's receive time; then never earlier than the cluster's previous event (the
engine's clock is ``max(previous, time)`` anyway; the watcher makes the stream itself
non-decreasing, across restarts through the state file).

**Workloads**: the engine reads ``status.admission`` of an applied Workload as an observed
admission, so a Workload's status is turned into exactly the lifecycle the contract defines:

- *admitted* = ``status.admission`` is set, ``QuotaReserved`` is not ``False``, and neither
  ``Evicted`` nor ``Finished`` is ``True`` (Kueue charges quota while the reservation holds, and
  clears ``Evicted`` when it reserves again);
- a Workload is ``Applied`` when it is first seen or its spec / metadata changed (its ``status``
  and ``resourceVersion`` / ``generation`` / ``managedFields`` left aside), with
  ``status.admission`` only while admitted (else removed from the copy sent);
- becoming admitted without such a change → ``WorkloadAdmitted`` (``admission`` = its
  ``status.admission``); a different admission while admitted → ``WorkloadAdmitted`` again;
- ceasing to be admitted (not finished) → ``WorkloadEvicted``, ``reason`` = the ``Evicted``
  condition's reason, else the ``False`` ``QuotaReserved`` condition's reason, else ``Evicted``;
- ``Finished`` becoming ``True`` → ``WorkloadFinished``, and nothing more for that Workload until
  it is deleted (applying it again would put it back in its queue).  A Workload first seen
  finished holds no quota and is not sent.

Every other kind: ``ADDED`` / ``MODIFIED`` → ``Applied`` with the object, ``DELETED`` →
``Deleted`` with ``apiVersion``, ``kind``, ``metadata.name`` / ``namespace`` / ``uid``.  Objects
are sent as served, with ``apiVersion`` / ``kind`` filled in where a list omits them and
``metadata.managedFields`` removed (as ``kubectl get`` does).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import orjson

from statemodel.errors import EventError
from statemodel.events.decode import parse_event
from statemodel.timefmt import format_time, parse_time
from streams.kube.kinds import KindSpec

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

_VOLATILE_METADATA = ("resourceVersion", "generation", "managedFields")


@dataclass
class EventClock:
    """The non-decreasing event time of one cluster (module docstring, "Time").

    Attributes:
        last_ms: the time of the last event stamped, ms since the epoch (0 before the first).
    """

    last_ms: int = 0

    def stamp(self, derived_ms: int | None, received_ms: int) -> int:
        """The time of the next event: ``derived_ms`` (else ``received_ms``), not before ``last_ms``."""
        ms = derived_ms if derived_ms is not None else received_ms
        if ms < self.last_ms:
            ms = self.last_ms
        self.last_ms = ms
        return ms


@dataclass
class Translation:
    """The envelopes one watch event (or one relist) gives, and the object to remember.

    Attributes:
        events: envelopes, in order (dicts ready for JSON).
        remembered: the object as it is now known (``None`` after a deletion).
    """

    events: list[dict] = field(default_factory=list)
    remembered: dict | None = None


def object_key(obj: dict) -> str:
    """``namespace/name`` of a namespaced object, ``name`` of a cluster-scoped one (``""`` if unnamed)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    ns = meta.get("namespace")
    return f"{ns}/{name}" if isinstance(ns, str) and ns else name


def resource_version(obj: dict | None) -> str | None:
    """``metadata.resourceVersion`` of ``obj`` when it is a non-empty string, else ``None``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return None
    rv = obj["metadata"].get("resourceVersion")
    return rv if isinstance(rv, str) and rv else None


def normalized(spec: KindSpec, obj: dict) -> dict:
    """``obj`` with ``apiVersion`` / ``kind`` filled in from ``spec`` where missing and
    ``metadata.managedFields`` removed (a shallow copy; ``obj`` is not changed)."""
    out = dict(obj)
    out.setdefault("apiVersion", spec.api_version)
    out.setdefault("kind", spec.kind)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def _digest(value: object) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def event_id(spec: KindSpec, obj: dict, what: str) -> str:
    """The deterministic id of the event ``what`` made from ``obj`` (module docstring, "Ids")."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    uid = meta.get("uid")
    ident = uid if isinstance(uid, str) and uid else f"{spec.kind}/{object_key(obj)}"
    rv = resource_version(obj) or f"sha256-{_digest(obj)}"
    return f"{ident}@{rv}:{what}"


def _ms(value: object) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value, "")
    except EventError:
        return None


def _latest(values: Iterable[object]) -> int | None:
    found = [ms for ms in map(_ms, values) if ms is not None]
    return max(found) if found else None


def written_ms(obj: dict, first_seen: bool) -> int | None:
    """When ``obj`` was last written: the latest ``managedFields[].time``, and when ``first_seen``
    also ``creationTimestamp``; ``None`` when it carries none of them."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    managed = meta.get("managedFields")
    times: list[object] = [m.get("time") for m in managed if isinstance(m, dict)] if isinstance(managed, list) else []
    if first_seen:
        times.append(meta.get("creationTimestamp"))
    return _latest(times)


def condition(obj: dict | None, ctype: str) -> dict | None:
    """The ``status.conditions[]`` entry of type ``ctype``, if any."""
    status = obj.get("status") if isinstance(obj, dict) else None
    conds = status.get("conditions") if isinstance(status, dict) else None
    if isinstance(conds, list):
        for cond in conds:
            if isinstance(cond, dict) and cond.get("type") == ctype:
                return cond
    return None


def _is(obj: dict | None, ctype: str, value: str) -> bool:
    cond = condition(obj, ctype)
    return cond is not None and cond.get("status") == value


def admission(obj: dict | None) -> dict | None:
    """``status.admission`` of a Workload, when it is an object."""
    status = obj.get("status") if isinstance(obj, dict) else None
    adm = status.get("admission") if isinstance(status, dict) else None
    return adm if isinstance(adm, dict) else None


def finished(obj: dict | None) -> bool:
    """Whether a Workload's ``Finished`` condition is ``True``."""
    return _is(obj, "Finished", "True")


def admitted(obj: dict | None) -> bool:
    """Whether a Workload holds quota (module docstring, "Workloads")."""
    return (admission(obj) is not None and not _is(obj, "QuotaReserved", "False")
            and not _is(obj, "Evicted", "True") and not finished(obj))


def _body(obj: dict) -> dict:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    out = {k: v for k, v in obj.items() if k != "status"}
    out["metadata"] = {k: v for k, v in meta.items() if k not in _VOLATILE_METADATA}
    return out


def _without_admission(obj: dict) -> dict:
    status = obj.get("status")
    if not isinstance(status, dict) or "admission" not in status:
        return obj
    out = dict(obj)
    out["status"] = {k: v for k, v in status.items() if k != "admission"}
    return out


def _transition_ms(obj: dict, ctype: str) -> int | None:
    cond = condition(obj, ctype)
    return _ms(cond.get("lastTransitionTime")) if cond is not None else None


class Translator:
    """Turns the watch events of one cluster into envelopes (module docstring), stamping their time.

    Args:
        cluster: the cluster name (the envelope's ``cluster`` and the Kafka key).
        clock: the cluster's event clock (restored from the state file).
    """

    def __init__(self, cluster: str, clock: EventClock) -> None:
        self.cluster = cluster
        self.clock = clock

    def _envelope(self, eid: str, etype: str, derived_ms: int | None, received_ms: int, **payload) -> dict:
        env = {"id": eid, "time": format_time(self.clock.stamp(derived_ms, received_ms)), "cluster": self.cluster,
               "type": etype, "v": 1}
        env.update(payload)
        return env

    def deleted(self, spec: KindSpec, obj: dict, received_ms: int) -> dict:
        """The ``Deleted`` envelope of ``obj`` (time: its ``deletionTimestamp``, else ``received_ms``)."""
        obj = normalized(spec, obj)
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        ref_meta = {k: meta[k] for k in ("name", "namespace", "uid") if k in meta}
        ref = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": ref_meta}
        return self._envelope(event_id(spec, obj, "deleted"), "Deleted", _ms(meta.get("deletionTimestamp")),
                              received_ms, object=ref)

    def translate(self, spec: KindSpec, wtype: str, obj: dict, prev: dict | None, received_ms: int) -> Translation:
        """Envelopes for one watch event of kind ``spec``.

        Args:
            wtype: ``ADDED``, ``MODIFIED`` or ``DELETED``.
            obj: the object the watch event carries.
            prev: the last known version of the same object (same key and uid), ``None`` if unknown.
            received_ms: the watcher's receive time (the time when the object gives none).

        Returns:
            The events (possibly none) and the object to remember.

        Raises:
            ValueError: ``wtype`` is not one of the three watch event types.
        """
        if wtype == DELETED:
            return Translation([self.deleted(spec, obj, received_ms)], None)
        if wtype not in (ADDED, MODIFIED):
            raise ValueError(f"watch event type {wtype!r}: must be ADDED, MODIFIED or DELETED")
        now = normalized(spec, obj)
        if spec.kind != "Workload" or spec.group != "kueue.x-k8s.io":
            return Translation([self._applied(spec, now, obj, prev is None, received_ms)], now)
        return Translation(self._workload(spec, now, obj, prev, received_ms), now)

    def _applied(self, spec: KindSpec, now: dict, raw: dict, first_seen: bool, received_ms: int) -> dict:
        return self._envelope(event_id(spec, now, "applied"), "Applied", written_ms(raw, first_seen), received_ms,
                              object=now)

    def _workload(self, spec: KindSpec, now: dict, raw: dict, prev: dict | None, received_ms: int) -> list[dict]:
        workload = object_key(now)
        if finished(now):
            if prev is None or finished(prev):
                return []
            return [self._envelope(event_id(spec, now, "finished"), "WorkloadFinished",
                                   _transition_ms(now, "Finished"), received_ms, workload=workload)]
        is_admitted, was_admitted = admitted(now), prev is not None and admitted(prev)
        sent = now if is_admitted else _without_admission(now)
        changed = prev is None or _body(now) != _body(prev)
        events: list[dict] = []
        if changed:
            events.append(self._applied(spec, sent, raw, prev is None, received_ms))
        if was_admitted and not is_admitted:
            events.append(self._envelope(event_id(spec, now, "evicted"), "WorkloadEvicted",
                                         self._eviction_ms(now), received_ms, workload=workload,
                                         reason=self._eviction_reason(now)))
        elif is_admitted and not changed and (not was_admitted or admission(now) != admission(prev)):
            events.append(self._envelope(event_id(spec, now, "admitted"), "WorkloadAdmitted",
                                         _transition_ms(now, "QuotaReserved"), received_ms, workload=workload,
                                         admission=admission(now)))
        return events

    @staticmethod
    def _eviction_reason(obj: dict) -> str:
        for ctype, value in (("Evicted", "True"), ("QuotaReserved", "False")):
            cond = condition(obj, ctype)
            if cond is not None and cond.get("status") == value and isinstance(cond.get("reason"), str) \
                    and cond["reason"]:
                return cond["reason"]
        return "Evicted"

    @staticmethod
    def _eviction_ms(obj: dict) -> int | None:
        if _is(obj, "Evicted", "True"):
            return _transition_ms(obj, "Evicted")
        return _transition_ms(obj, "QuotaReserved")

    def watch_event(self, spec: KindSpec, wtype: str, obj: dict, known: dict[str, dict], received_ms: int
                    ) -> list[dict]:
        """Envelopes for one watch event, updating ``known`` (key → last known object of the kind).

        An ``ADDED`` / ``MODIFIED`` carrying the resourceVersion already known for its object is a
        re-delivery and gives nothing; one whose uid differs from the known object's (deleted and
        created again unseen) first gives the old object's ``Deleted``.

        Raises:
            ValueError: ``wtype`` is not one of the three watch event types.
        """
        key = object_key(normalized(spec, obj))
        prev = known.get(key)
        events: list[dict] = []
        if wtype != DELETED and prev is not None:
            if _uid(prev) != _uid(obj):
                events.append(self.deleted(spec, prev, received_ms))
                prev = None
            elif resource_version(prev) == resource_version(obj) is not None:
                return []
        result = self.translate(spec, wtype, obj, prev, received_ms)
        events.extend(result.events)
        if result.remembered is None:
            known.pop(key, None)
        else:
            known[key] = result.remembered
        return events

    def relist(self, spec: KindSpec, known: dict[str, dict], items: list[dict], received_ms: int
               ) -> tuple[list[dict], dict[str, dict]]:
        """The differences between the ``known`` objects of a kind and a fresh list of it.

        Objects are visited by key (sorted): a new or changed object (another resourceVersion) is
        translated as a watch event against its known version; one whose uid changed is deleted
        first and then added; a known object missing from the list is ``Deleted``.

        Args:
            known: key (``object_key``) → last known object.
            items: the list response's ``items``.

        Returns:
            ``(events, objects now known by key)``.
        """
        listed = {object_key(normalized(spec, item)): item for item in items}
        events: list[dict] = []
        now_known: dict[str, dict] = {}
        for key in sorted(set(listed) | set(known)):
            item, prev = listed.get(key), known.get(key)
            if item is None:
                assert prev is not None
                events.append(self.deleted(spec, prev, received_ms))
                continue
            if prev is not None and _uid(prev) != _uid(item):
                events.append(self.deleted(spec, prev, received_ms))
                prev = None
            if prev is not None and resource_version(prev) == resource_version(item) is not None:
                now_known[key] = prev
                continue
            result = self.translate(spec, ADDED if prev is None else MODIFIED, item, prev, received_ms)
            events.extend(result.events)
            assert result.remembered is not None
            now_known[key] = result.remembered
        return events, now_known

    def batches(self, prefix: str, events: list[dict], max_events: int, max_bytes: int) -> list[dict]:
        """``events`` as ``Batch`` envelopes of at most ``max_events`` inner events and about
        ``max_bytes`` of JSON each (one batch when they fit; an event larger than ``max_bytes``
        alone in its batch).  Each batch's id is ``<prefix>:<digest of its inner ids>``, its time
        the time of its last inner event.  No events → no batch.

        An event the engine's decoder rejects (``statemodel.events.decode.parse_event``: a kind
        this engine does not read, a field beyond a limit) would reject its whole batch
        (docs/events.md, ``Batch``); it is returned after the batches, on its own, so it alone is
        dead-lettered with its reason.
        """
        out: list[dict] = []
        rejected: list[dict] = []
        chunk: list[dict] = []
        size = 0
        for event in events:
            try:
                parse_event(event)
            except EventError:
                rejected.append(event)
                continue
            n = len(orjson.dumps(event)) + 1
            if chunk and (len(chunk) >= max_events or size + n > max_bytes):
                out.append(self._batch(prefix, chunk))
                chunk, size = [], 0
            chunk.append(event)
            size += n
        if chunk:
            out.append(self._batch(prefix, chunk))
        return out + rejected

    def _batch(self, prefix: str, chunk: list[dict]) -> dict:
        return {"id": f"{prefix}:{_digest([e['id'] for e in chunk])}", "time": chunk[-1]["time"],
                "cluster": self.cluster, "type": "Batch", "v": 1, "events": chunk}


def _uid(obj: dict) -> object:
    meta = obj.get("metadata")
    return meta.get("uid") if isinstance(meta, dict) else None
