"""Decoding of v1 events (docs/events.md): one NDJSON line or Kafka message -> a typed :class:`Event`.

``decode_event`` parses the JSON text; ``parse_event`` validates an already-decoded object.  This
module reads the envelope (``id``, ``time``, ``cluster``, ``type``, ``v``), the payload of each event
type and the inner events of a ``Batch``, and dispatches each object by ``apiVersion``/``kind`` to
the parser of its API group: ``statemodel.events.kueue`` (``kueue.x-k8s.io``), ``core`` (``v1``),
``config`` (``quotaledger.io``), ``koordinator`` (``scheduling.sigs.k8s.io``), ``placement``
(``Topology`` of ``kai.scheduler`` and ``kueue.x-k8s.io/v1alpha1``).  An object of an older apiVersion is first upgraded by
``statemodel.events.upcasters``, so the parsers only see the current shape.

Every rejection is an :class:`EventError` whose ``path`` names the offending field (dotted, with list
indices and ``[key]`` for map keys, Kubernetes ``field.Path`` style:
``object.spec.resourceGroups[0].flavors[1].resources[0].nominalQuota``,
``object.spec.podSets[0].requests[nvidia.com/gpu]``; for an upgraded object, the field as written)
and whose ``problem`` says what is wrong.

Pure: no I/O, clock, randomness or environment; stdlib + orjson only.
"""

from __future__ import annotations

from typing import Any, Callable

import orjson

from statemodel.errors import EventError
from statemodel.events import config, core, koordinator, kueue, placement, volcano
from statemodel.events.envelope import EVENT_TYPES, Event
from statemodel.events.fields import fail, positional_constructor, req_str, shown, type_problem
from statemodel.events.kueue import parse_admission, req_namespace
from statemodel.events.names import id_problem, label_problem, subdomain_problem, text_problem
from statemodel.events.oversized import OversizedRecord
from statemodel.limits import MAX_BATCH_EVENTS, MAX_EVENT_BYTES, MAX_ID_BYTES, MAX_TEXT_BYTES
from statemodel.events.upcasters import check_envelope_version, current_version, is_older_version, original_path, upcast
from statemodel.objects import KubeObject, ObjectRef
from statemodel.timefmt import parse_time

__all__ = ["decode_event", "parse_event"]

_SORT = orjson.OPT_SORT_KEYS
_EVENT_TYPES = frozenset(EVENT_TYPES)
_new_event = positional_constructor(Event)

_Parser = Callable[[dict, str, int], KubeObject]

_KINDS: dict[str, dict[str, tuple[_Parser, bool]]] = {**kueue.KINDS, **core.KINDS, **config.KINDS,
                                                      **koordinator.KINDS, **volcano.KINDS, **placement.KINDS}
"""apiVersion -> kind -> ``(parser, namespaced)``, current versions only."""


def _kind_of(o: dict) -> tuple[_Parser, bool, str, str, str]:
    """``(parser, namespaced, apiVersion as written, kind, name)``; validates apiVersion/kind/metadata.name.

    An older apiVersion resolves to the parser of the version its upcasters lead to.
    """
    api = o.get("apiVersion")
    if not isinstance(api, str) or not api:
        fail("object.apiVersion", "must not be empty" if api == "" else type_problem(api, "a string"))
    kind = o.get("kind")
    if not isinstance(kind, str) or not kind:
        fail("object.kind", "must not be empty" if kind == "" else type_problem(kind, "a string"))
    kinds = _KINDS.get(api)
    if kinds is None:
        current = current_version(api, kind)
        if current is not None:
            kinds = _KINDS[current]
        elif is_older_version(api):
            fail("object.kind", f"unknown kind {shown(kind)} for apiVersion {shown(api)}")
        else:
            fail("object.apiVersion", f"unknown apiVersion {shown(api)}")
    entry = kinds.get(kind)
    if entry is None:
        fail("object.kind", f"unknown kind {shown(kind)} for apiVersion {shown(api)}")
    meta = o.get("metadata")
    if not isinstance(meta, dict):
        fail("object.metadata", type_problem(meta, "an object"))
    name = req_str(meta, "name", "object.metadata")
    problem = subdomain_problem(name)
    if problem is not None:
        fail("object.metadata.name", problem)
    return entry[0], entry[1], api, kind, name


def _parse_object(o: Any, time_ms: int) -> KubeObject:
    if not isinstance(o, dict):
        fail("object", type_problem(o, "an object"))
    parser, _, api, kind, name = _kind_of(o)
    if api in _KINDS:
        return parser(o, name, time_ms)
    try:
        return parser(upcast(o), name, time_ms)
    except EventError as e:
        raise EventError(original_path(api, kind, e.path), e.problem) from None


def _parse_ref(o: Any) -> ObjectRef:
    if not isinstance(o, dict):
        fail("object", type_problem(o, "an object"))
    _, namespaced, _, kind, name = _kind_of(o)
    namespace = req_namespace(o["metadata"]) if namespaced else ""
    return ObjectRef(kind, namespace, name)


def _workload_key(raw: dict) -> str:
    v = raw.get("workload")
    if not isinstance(v, str):
        fail("workload", type_problem(v, "a string 'namespace/name'"))
    ns, sep, name = v.partition("/")
    if not sep or not ns or not name or "/" in name:
        fail("workload", f"must be 'namespace/name', got {shown(v)}")
    problem = label_problem(ns)
    if problem is not None:
        fail("workload", f"namespace {problem}")
    problem = subdomain_problem(name)
    if problem is not None:
        fail("workload", f"name {problem}")
    return v


# --------------------------------------------------------------------------- envelope


_CLUSTERS: dict[str, None] = {}
"""Memo of cluster names already found valid (bounded; cleared when full)."""
_CLUSTERS_MAX = 4096
_NUL = b"\\u0000"
"""How orjson writes a NUL character inside a string; a literal backslash-u0000 text also contains it,
so :func:`_nul_path` decides."""


def _nul_path(raw: Any) -> str | None:
    """The path of the first key or string value holding a NUL character, ``None`` if there is none.

    Iterative (explicit stack), so a deeply nested document costs memory, never Python recursion.
    """
    stack: list[tuple[str, Any]] = [("", raw)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, str):
            if "\x00" in v:
                return path
        elif isinstance(v, dict):
            d: dict[str, Any] = v
            keys: list[str] = list(d)
            for j in range(len(keys) - 1, -1, -1):
                k = keys[j]
                if "\x00" in k:
                    key = shown(k)
                    return f"{path}[{key}]" if path else key
                stack.append((f"{path}.{k}" if path else k, d[k]))
        elif isinstance(v, list):
            for i in range(len(v) - 1, -1, -1):
                stack.append((f"{path}[{i}]", v[i]))
    return None


def _reject_nul(raw: dict) -> None:
    """Reject an event holding a NUL character in any key or string (PostgreSQL text and JSONB cannot
    store it).  Called when the canonical form contains ``_NUL``, before any field is read, so no error
    path or message ever carries a NUL."""
    path = _nul_path(raw)
    if path is not None:
        fail(path, "must not contain the NUL character")


def _parse(raw: Any, default_cluster: str, default_time: int | None, nested: bool) -> Event:
    if not isinstance(raw, dict):
        fail("", "event must be a JSON object")
    eid = raw.get("id")
    if not isinstance(eid, str) or not eid:
        fail("id", "must not be empty" if eid == "" else type_problem(eid, "a string"))
    if len(eid) > MAX_ID_BYTES or not eid.isascii() or not eid.isprintable():
        problem = id_problem(eid)
        if problem is not None:
            fail("id", problem)  # an unusable id is not reported as the event's id
    try:
        try:
            canonical = orjson.dumps(raw, option=_SORT)
        except (orjson.JSONEncodeError, TypeError) as e:
            fail("", f"not representable as JSON: {e}")
        if not nested and _NUL in canonical:
            _reject_nul(raw)
        t = raw.get("time")
        if t is None and default_time is not None:
            time_ms = default_time
        else:
            time_ms = parse_time(t, "time") if t is not None else fail("time", "required")
        cluster = raw.get("cluster")
        if cluster is None:
            cluster = default_cluster
        elif not isinstance(cluster, str) or not cluster:
            fail("cluster", "must not be empty" if cluster == "" else "must be a string")
        elif cluster not in _CLUSTERS:
            problem = id_problem(cluster)
            if problem is not None:
                fail("cluster", problem)
            if len(_CLUSTERS) >= _CLUSTERS_MAX:
                _CLUSTERS.clear()
            _CLUSTERS[cluster] = None
        etype = raw.get("type")
        if not isinstance(etype, str):
            fail("type", type_problem(etype, "a string"))
        if etype not in _EVENT_TYPES:
            fail("type", f"unknown type {shown(etype)}: must be one of {', '.join(EVENT_TYPES)}")
        check_envelope_version(raw)

        obj = ref = workload = admission = reason = None
        events: tuple[Event, ...] = ()
        if etype == "Applied":
            obj = _parse_object(raw.get("object"), time_ms)
        elif etype == "Deleted":
            ref = _parse_ref(raw.get("object"))
        elif etype == "WorkloadAdmitted":
            workload = _workload_key(raw)
            admission = parse_admission(raw.get("admission"), "admission")
        elif etype == "WorkloadEvicted":
            workload = _workload_key(raw)
            reason = raw.get("reason")
            if reason is None:
                reason = "Evicted"
            elif not isinstance(reason, str):
                fail("reason", "must be a string")
            else:
                problem = text_problem(reason, MAX_TEXT_BYTES)
                if problem is not None:
                    fail("reason", problem)
        elif etype == "WorkloadFinished":
            workload = _workload_key(raw)
        elif etype == "Batch":
            if nested:
                fail("type", "a Batch may not contain a Batch")
            inner = raw.get("events")
            if not isinstance(inner, list):
                fail("events", type_problem(inner, "a list of events"))
            if not inner:
                fail("events", "must not be empty")
            if len(inner) > MAX_BATCH_EVENTS:
                fail("events", f"must have at most {MAX_BATCH_EVENTS} events, got {len(inner)}")
            parsed = []
            for i, ev in enumerate(inner):
                try:
                    parsed.append(_parse(ev, cluster, time_ms, True))
                except EventError as e:
                    raise EventError(f"events[{i}].{e.path}" if e.path else f"events[{i}]", e.problem) from None
            events = tuple(parsed)
    except EventError as e:
        e.event_id = eid
        raise
    return _new_event(eid, time_ms, cluster, etype, canonical, obj, ref, workload, admission, reason, events)


def parse_event(raw: dict, *, default_cluster: str = "default") -> Event:
    """Validate one decoded event (a JSON object) and build the typed :class:`Event`.

    Args:
        raw: the event as decoded JSON (``dict``), EVENTS.md "Envelope": ``id``, ``time``, optional ``cluster``
            (default ``default_cluster``), ``type`` (one of ``EVENT_TYPES``), optional ``v`` (must be 1: see
            ``statemodel.events.upcasters``), and
            the payload of the type.
        default_cluster: cluster of events that do not name one.

    Returns:
        An :class:`Event`; ``canonical`` is ``orjson.dumps(raw, OPT_SORT_KEYS)``.  Inner events of a ``Batch``
        default ``time``/``cluster`` to the batch's, and each has the canonical form of its own raw object.

    Raises:
        EventError: ``path`` names the field (``object.spec.podSets[0].count``; inside a batch prefixed with
        ``events[i].``), ``problem`` says what is wrong, ``event_id`` is the (outer) ``id`` when readable.
    """
    return _parse(raw, default_cluster, None, False)


def decode_event(line: bytes | str, *, default_cluster: str = "default") -> Event:
    """Decode one JSON text (an NDJSON line or a Kafka message value) and validate it with :func:`parse_event`.

    Raises:
        EventError: with path ``""`` for a text longer than ``MAX_EVENT_BYTES`` (checked before parsing;
        an ``OversizedRecord``, a text a reader did not read whole, by its full ``size``),
        invalid JSON, invalid UTF-8 or a top-level value that is not an object; otherwise as :func:`parse_event`.
    """
    size = len(line)
    if size > MAX_EVENT_BYTES // 4 and isinstance(line, str):
        size = len(line.encode("utf-8", "surrogatepass"))
    elif type(line) is not bytes and isinstance(line, OversizedRecord):
        size = line.size
    if size > MAX_EVENT_BYTES:
        raise EventError("", f"event too large: {size} bytes, at most {MAX_EVENT_BYTES}")
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise EventError("", f"invalid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise EventError("", "event must be a JSON object")
    return _parse(raw, default_cluster, None, False)
