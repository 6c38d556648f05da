"""The hostile-input corpus: every kind of bad record a producer can send, mixed into a clean history.

``build(scale)`` returns a :class:`Corpus`: the *clean* history and the *mix*, the clean history
with hostile lines interleaved.  Every line is tagged with its category outside the line (``Line``),
so a test can count what each category did on each channel without parsing anything.

The clean history is the closed-loop simulation of the DLRM trace slice (``tests/data/dlrm_slice.csv``,
cluster ``dlrm``; the benchmark scale replays it in several clusters) plus the **edge** section:
inputs that look hostile but are valid by the contract (docs/events.md), each in a cluster of its
own so they cannot disturb the simulation, with an outcome a test works out by hand: edge-valid
times (year 1, year 9999, -1 ms), cohort cycles and a self-parent, a deep parent chain, dangling
references, deletes of objects that do not exist and lifecycle events of unknown workloads (no-ops),
ids made of SQL metacharacters, quotes, emoji and non-ASCII letters, and JSON numbers
PostgreSQL's JSONB would normalise (``1e2``, ``-0.0``).  A valid event enters the hash chain even
when it changes nothing else, so these belong to the clean history: the mix and the clean history
then hold the same valid events in the same order per cluster.

Every hostile line is one the contract says is **rejected** (a dead letter with a reason) or a
**duplicate** (an id already seen in its cluster: archived, never applied).  Hostile lines name the
simulation's cluster wherever they carry a cluster, so one that were wrongly accepted would change
its hash chain: the mix's state hash equals the clean history's exactly when every hostile line is
rejected or a duplicate.  Duplicates are placed after the line whose id they repeat.

Kafka-only categories (null keys, tombstones, empty and binary values, 5 MB values, non-UTF-8 keys)
have no file form; lines larger than ``Scale.kafka_max`` go through the file channels only (the
ingest worker dead-letters any record over ``--max-record-bytes`` unread, which the 5 MB values
already show).

The defects of the hardening work each have lines here: numbers of more than 4,300 digits in
quantities, durations and weights ("bad quantities"); NUL in ids, names, clusters and the type of a
rejected event; 2.7 kB and 1 MB ids, names and clusters (PostgreSQL's btree row limit); an empty id
and over-sized records (the broker-reset check); thousands of unknown clusters (the SQLite worker
stall); ``1e2`` / ``-0.0`` (JSONB normalisation, in the edge section); the 100,000-deep chain at the
benchmark scale, 100,000 podSets, the 1,000,000-event Batch and 10,000 flavors (unbounded cost per
event); the chain's tree view (recursion; the channel test draws it); dead letters naming no
cluster (the channel test reruns with ``--replace``); deletes of missing objects (no-op).  URL
redaction, the soak's comparison and the compose file are not about input and have no lines.

Deterministic: one ``random.Random`` seeded with ``SEED``; no wall clock, no environment.
"""

from __future__ import annotations

import collections
import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from replay.sim.importers.dlrm import import_dlrm
from replay.sim.quota_tree import generate_quota
from replay.sim.simulator import simulate
from statemodel.timefmt import parse_duration
from tests.paths import DATA

SEED = 20260301
"""The corpus's only source of variation."""

REJECTED = "rejected"
DUPLICATE = "duplicate"
APPLIED = "applied"
"""A line's expected outcome: the ``events.status`` values of the SQL archive."""

CLEAN = "clean history"
"""Category of the simulation's lines."""

API = "kueue.x-k8s.io/v1beta2"
CLUSTER = "dlrm"
"""The simulation's cluster: hostile lines name it, so a wrongly accepted one changes its hash."""
TIME = "2025-01-02T00:00:00Z"
"""A valid time inside the simulation's span, for hostile events whose time is not the problem."""


class Line(NamedTuple):
    """One record of the corpus.

    Attributes:
        category: the category it demonstrates (``CATEGORIES``; ``CLEAN`` for the simulation).
        value: the record's bytes (an NDJSON line without its newline); ``None`` is a Kafka tombstone.
        key: the Kafka key (``None``: a null key); the file channels ignore it.
        outcome: ``REJECTED``, ``DUPLICATE`` or ``APPLIED``.
        file: whether the line goes through the file channels (a tombstone or an empty value cannot).
        kafka: whether the line goes through Kafka (at most ``Scale.kafka_max`` bytes).
    """

    category: str
    value: bytes | None
    key: bytes | None
    outcome: str
    file: bool
    kafka: bool


@dataclass(frozen=True)
class Scale:
    """How much of each category to generate.

    ``copies``: rounds over the ordinary categories (each round gives every one of them its lines
    again, with fresh ids and random choices); the other fields size the categories that are about
    size: a line of ``huge_line`` bytes, arrays nested ``nesting`` deep, a Batch of
    ``batch_events`` events, a Workload of ``pod_sets`` podSets, a ClusterQueue of ``flavors``
    flavors, ids and names of ``big_text`` characters, a parent chain ``chain_depth`` cohorts
    deep (valid: the edge section), ``unknown_clusters`` distinct cluster names, Kafka values of
    ``kafka_value`` bytes; ``kafka_max`` is the largest record sent to the broker; ``clean_clusters``
    copies of the simulation, in clusters ``dlrm``, ``dlrm-1``, ...
    """

    copies: int
    huge_line: int = 10 * 2**20
    nesting: int = 100_000
    batch_events: int = 1_000_000
    pod_sets: int = 100_000
    flavors: int = 10_000
    big_text: int = 2**20
    chain_depth: int = 1_000
    unknown_clusters: int = 2_000
    kafka_value: int = 5 * 2**20
    kafka_max: int = 6 * 2**20
    clean_clusters: int = 1


TEST_SCALE = Scale(copies=5)
"""About 5,000 lines: the channel test (tests/hostile/test_channels.py)."""
BENCH_SCALE = Scale(copies=325, chain_depth=100_000, unknown_clusters=10_000, clean_clusters=8)
"""About 100,000 hostile lines: benchmarks/hostile.py."""


class Corpus(NamedTuple):
    """``clean``: the clean history (the simulation and the edge section), in order; ``mix``: the
    same lines with the hostile ones interleaved."""

    clean: list[Line]
    mix: list[Line]


# --------------------------------------------------------------------------- building blocks


def _dumps(obj: Any) -> bytes:
    """Compact JSON; the standard library writes the integers beyond 64 bits orjson refuses."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _event(eid: str, etype: str = "Applied", cluster: str = CLUSTER, **fields: Any) -> dict:
    return {"id": eid, "time": TIME, "cluster": cluster, "type": etype, **fields}


def _resource_group(quota: Any = "4", flavors: int = 1, **limits: Any) -> dict:
    return {"coveredResources": ["cpu"], "flavors": [
        {"name": f"f{i}", "resources": [{"name": "cpu", "nominalQuota": quota, **limits}]} for i in range(flavors)]}


def _cluster_queue(name: str, cohort: str | None = "hx-root", groups: list | None = None, **spec: Any) -> dict:
    base: dict = {"resourceGroups": [_resource_group()] if groups is None else groups}
    if cohort is not None:
        base["cohortName"] = cohort
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {**base, **spec}}


def _cohort(name: str, parent: str | None = None, **spec: Any) -> dict:
    return {"apiVersion": API, "kind": "Cohort", "metadata": {"name": name},
            "spec": {**({"parentName": parent} if parent else {}), **spec}}


def _local_queue(namespace: str, name: str, cluster_queue: str) -> dict:
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"namespace": namespace, "name": name},
            "spec": {"clusterQueue": cluster_queue}}


def _pod_set(name: str = "main", cpu: Any = "1", count: int = 1) -> dict:
    return {"name": name, "count": count, "requests": {"cpu": cpu}}


def _workload(namespace: str, name: str, queue: str = "hx-lq", pod_sets: list | None = None, **spec: Any) -> dict:
    return {"apiVersion": API, "kind": "Workload", "metadata": {"namespace": namespace, "name": name},
            "spec": {"queueName": queue, "podSets": [_pod_set()] if pod_sets is None else pod_sets, **spec}}


def _template_workload(namespace: str, name: str) -> dict:
    return {"apiVersion": API, "kind": "Workload", "metadata": {"namespace": namespace, "name": name},
            "spec": {"queueName": "hx-lq", "priority": 5, "podSets": [{"name": "main", "count": 2, "minCount": 1,
                     "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {
                         "cpu": "500m", "memory": "1Gi"}}}]}}}]}}


def _set(obj: Any, path: tuple, value: Any) -> Any:
    """A deep copy of ``obj`` with the value at ``path`` (keys and list indices) replaced, or removed
    when ``value`` is ``_MISSING``."""
    out = copy.deepcopy(obj)
    node = out
    for step in path[:-1]:
        node = node[step]
    if value is _MISSING:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_MISSING = object()

WRONG = {
    "str": [7, [], {}, True],
    "int": ["1", [], {}, 1.5, True],
    "obj": ["x", 7, [], True],
    "list": ["x", 7, {}, True],
    "qty": [[], {}, True, "lots"],
    "time": [[], {}, True, 1.5, "yesterday"],
    "bool": ["true", 1, [], {}],
    "dur": [7, [], "soon", True],
}
"""Values of the wrong type for each kind of field (``null`` is left out: it means absent)."""


def _templates(n: str) -> list[tuple[dict, list[tuple[tuple, str]]]]:
    """Valid events (fresh names from ``n``) and the ``(path, kind)`` of every field they have."""
    obj = ("object",)
    spec = obj + ("spec",)
    rg = spec + ("resourceGroups", 0)
    res = rg + ("flavors", 0, "resources", 0)
    ps = spec + ("podSets", 0)
    cq = _cluster_queue(f"hx-cq-{n}", cohortName="hx-root", queueingStrategy="StrictFIFO",
                        preemption={"withinClusterQueue": "Never"}, flavorFungibility={"whenCanBorrow": "Borrow"},
                        fairSharing={"weight": "1"}, stopPolicy="None")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(borrowingLimit="1", lendingLimit="1")
    tmpl = _template_workload("hx", f"hx-wt-{n}")
    cont = ps + ("template", "spec", "containers", 0)
    config = {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
              "spec": {"admissionFairSharing": {"usageHalfLifeTime": "1h", "usageSamplingInterval": "5m",
                                                "resourceWeights": {"cpu": 1}},
                       "fairSharing": {"enable": True}}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"hx-node-{n}", "labels": {"zone": "a"}},
            "spec": {"unschedulable": False, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4"}}}
    admitted = _event(f"hx-adm-{n}", "WorkloadAdmitted", workload="hx/hx-w", admission={
        "clusterQueue": "hx-cq", "podSetAssignments": [{"name": "main", "count": 1, "flavors": {"cpu": "f0"},
                                                        "resourceUsage": {"cpu": "1"}}]})
    psa = ("admission", "podSetAssignments", 0)
    return [
        (_event(f"hx-env-{n}", object=_cluster_queue(f"hx-e-{n}")),
         [(("id",), "str"), (("time",), "time"), (("cluster",), "str"), (("type",), "str"), (("v",), "int"),
          (obj, "obj"), (obj + ("apiVersion",), "str"), (obj + ("kind",), "str"), (obj + ("metadata",), "obj"),
          (obj + ("metadata", "name"), "str")]),
        (_event(f"hx-cq-{n}", object=cq),
         [(spec, "obj"), (spec + ("cohortName",), "str"), (spec + ("resourceGroups",), "list"), (rg, "obj"),
          (rg + ("coveredResources",), "list"), (rg + ("coveredResources", 0), "str"), (rg + ("flavors",), "list"),
          (rg + ("flavors", 0), "obj"), (rg + ("flavors", 0, "name"), "str"),
          (rg + ("flavors", 0, "resources"), "list"), (res, "obj"), (res + ("name",), "str"),
          (res + ("nominalQuota",), "qty"), (res + ("borrowingLimit",), "qty"), (res + ("lendingLimit",), "qty"),
          (spec + ("queueingStrategy",), "str"), (spec + ("preemption",), "obj"),
          (spec + ("preemption", "withinClusterQueue"), "str"), (spec + ("flavorFungibility",), "obj"),
          (spec + ("fairSharing",), "obj"), (spec + ("fairSharing", "weight"), "qty"),
          (spec + ("stopPolicy",), "str")]),
        (_event(f"hx-co-{n}", object=_cohort(f"hx-co-{n}", "hx-root", resourceGroups=[_resource_group()])),
         [(spec + ("parentName",), "str"), (spec + ("resourceGroups",), "list")]),
        (_event(f"hx-lq-{n}", object=_local_queue("hx", f"hx-lq-{n}", "hx-cq")),
         [(obj + ("metadata", "namespace"), "str"), (spec + ("clusterQueue",), "str")]),
        (_event(f"hx-w-{n}", object=_workload("hx", f"hx-w-{n}", priority=3)),
         [(spec + ("queueName",), "str"), (spec + ("priority",), "int"), (spec + ("podSets",), "list"), (ps, "obj"),
          (ps + ("name",), "str"), (ps + ("count",), "int"), (ps + ("requests",), "obj"),
          (ps + ("requests", "cpu"), "qty"), (obj + ("metadata", "namespace"), "str")]),
        (_event(f"hx-wt-{n}", object=tmpl),
         [(ps + ("template",), "obj"), (ps + ("template", "spec"), "obj"), (ps + ("minCount",), "int"),
          (ps + ("template", "spec", "containers"), "list"), (cont, "obj"), (cont + ("resources",), "obj"),
          (cont + ("resources", "requests"), "obj"), (cont + ("resources", "requests", "memory"), "qty")]),
        (_event(f"hx-rf-{n}", object={"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": f"hx-rf-{n}"},
                                      "spec": {"nodeLabels": {"zone": "a"}}}),
         [(spec + ("nodeLabels",), "obj"), (spec + ("nodeLabels", "zone"), "str")]),
        (_event(f"hx-node-{n}", object=node),
         [(obj + ("metadata", "labels"), "obj"), (obj + ("status", "allocatable"), "obj"),
          (obj + ("status", "allocatable", "cpu"), "qty"), (spec + ("unschedulable",), "bool"),
          (spec + ("taints",), "list"), (spec + ("taints", 0, "effect"), "str")]),
        (_event(f"hx-cfg-{n}", object=config),
         [(spec + ("admissionFairSharing",), "obj"), (spec + ("admissionFairSharing", "usageHalfLifeTime"), "dur"),
          (spec + ("admissionFairSharing", "usageSamplingInterval"), "dur"),
          (spec + ("admissionFairSharing", "resourceWeights"), "obj"), (spec + ("fairSharing",), "obj"),
          (spec + ("fairSharing", "enable"), "bool")]),
        (admitted,
         [(("workload",), "str"), (("admission",), "obj"), (("admission", "clusterQueue"), "str"),
          (("admission", "podSetAssignments"), "list"), (psa, "obj"), (psa + ("count",), "int"),
          (psa + ("flavors",), "obj"), (psa + ("resourceUsage",), "obj"), (psa + ("resourceUsage", "cpu"), "qty")]),
        (_event(f"hx-ev-{n}", "WorkloadEvicted", workload="hx/hx-w", reason="Preempted"), [(("reason",), "str")]),
        (_event(f"hx-fin-{n}", "WorkloadFinished", workload="hx/hx-w"), [(("workload",), "str")]),
        (_event(f"hx-del-{n}", "Deleted", object={"apiVersion": API, "kind": "LocalQueue",
                                                  "metadata": {"namespace": "hx", "name": "hx-lq"}}),
         [(obj, "obj"), (obj + ("metadata", "name"), "str"), (obj + ("metadata", "namespace"), "str")]),
        (_event(f"hx-batch-{n}", "Batch", events=[_event(f"hx-in-{n}", "Tick")]), [(("events",), "list")]),
    ]


# --------------------------------------------------------------------------- the categories

Make = Callable[[random.Random, "Context"], Iterator[tuple[bytes | None, bytes | None]]]
"""A category's generator: ``(value, key)`` pairs."""


@dataclass
class Context:
    """What a category generator may use: the scale, the round (for fresh ids), the clean lines."""

    scale: Scale
    round: int
    clean: list[bytes]

    def n(self, i: int = 0) -> str:
        return f"{self.round}-{i}"


def _keyed(values: list[bytes]) -> Iterator[tuple[bytes | None, bytes | None]]:
    for v in values:
        yield v, CLUSTER.encode()


def _malformed(rng: random.Random, c: Context) -> Iterator:
    line = rng.choice(c.clean)
    yield from _keyed([line[:rng.randint(1, len(line) - 2)], line + b" trailing", line + b"}", b"{not json " + line,
                       b'{"id": "hx-' + c.n().encode() + b'", "time": ', b"NaN", b"hello, world", b"{}}",
                       b'{"id": "x", "time": 1, "type": "Tick",}', b'{"a": NaN}', b"\"unterminated"])


def _non_utf8(rng: random.Random, c: Context) -> Iterator:
    line = rng.choice(c.clean)
    yield from _keyed([line.replace(b'"id":"', b'"id":"\xff\xfe', 1), line.replace(b'"', b'"\xc3', 1)[:-1] + b"}",
                       _dumps(_event(f"hx-u-{c.n()}", "Tick")).replace(b"Tick", b"T\xe9ck"),
                       b'{"id": "\\ud800", "time": 1, "type": "Tick", "cluster": "dlrm"}'])


def _bom(rng: random.Random, c: Context) -> Iterator:
    yield from _keyed([b"\xef\xbb\xbf" + _dumps(_event(f"hx-bom-{c.n()}", "Tick")),
                       b"\xef\xbb\xbf" + rng.choice(c.clean).replace(b'"id":"', b'"id":"hx-bom-', 1)])


def _non_objects(rng: random.Random, c: Context) -> Iterator:
    yield from _keyed([_dumps([orjson.loads(rng.choice(c.clean))]), b'"Applied"', b"42", b"-1.5e3", b"null", b"true",
                       b"false", b"[]", _dumps([_event(f"hx-arr-{c.n()}", "Tick")])])


def _huge_line(rng: random.Random, c: Context) -> Iterator:
    pad = "x" * c.scale.huge_line
    yield _dumps(_event(f"hx-huge-{c.n()}", "Tick", annotations={"pad": pad})), CLUSTER.encode()


def _nesting(rng: random.Random, c: Context) -> Iterator:
    deep = c.scale.nesting
    yield b'{"id":"hx-deep-' + c.n().encode() + b'","time":1,"type":"Tick","x":' + b"[" * deep + b"]" * deep + b"}", \
        CLUSTER.encode()
    yield b'{"id":"hx-deepo-' + c.n().encode() + b'","time":1,"type":"Tick","x":' + b'{"a":' * deep + b"1" + \
        b"}" * deep + b"}", CLUSTER.encode()


def _wrong_types(rng: random.Random, c: Context) -> Iterator:
    for t, (event, fields) in enumerate(_templates(c.n())):
        for path, kind in fields:
            event["id"] = f"hx-wt-{c.n(t)}-{'.'.join(map(str, path))}"
            yield _dumps(_set(event, path, rng.choice(WRONG[kind]))), CLUSTER.encode()


def _missing(rng: random.Random, c: Context) -> Iterator:
    required = {0: [("id",), ("time",), ("type",), ("object",), ("object", "apiVersion"), ("object", "kind"),
                    ("object", "metadata"), ("object", "metadata", "name")],
                1: [("object", "spec", "resourceGroups", 0, "flavors", 0, "name"),
                    ("object", "spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "name"),
                    ("object", "spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota")],
                3: [("object", "metadata", "namespace")],
                4: [("object", "spec", "podSets", 0, "requests"), ("object", "metadata", "namespace"),
                    ("object", "spec", "podSets")],
                9: [("workload",), ("admission",), ("admission", "podSetAssignments", 0, "name")],
                11: [("workload",)],
                12: [("object", "metadata", "name"), ("object", "metadata", "namespace")],
                13: [("events",)]}
    templates = _templates(c.n())
    for t, paths in required.items():
        event = templates[t][0]
        for path in paths:
            event["id"] = f"hx-miss-{c.n(t)}-{'.'.join(map(str, path))}"
            yield _dumps(_set(event, path, _MISSING)), CLUSTER.encode()
    yield b'{"id":""}', CLUSTER.encode()
    yield _dumps({"id": "", "time": TIME, "cluster": CLUSTER, "type": "Tick"}), CLUSTER.encode()


def _unknown(rng: random.Random, c: Context) -> Iterator:
    n = c.n()
    cq = _cluster_queue(f"hx-unk-{n}")
    yield from _keyed([
        _dumps(_event(f"hx-unk-t-{n}", "Exploded", object=cq)),
        _dumps(_event(f"hx-unk-t2-{n}", "applied", object=cq)),
        _dumps(_event(f"hx-unk-k-{n}", object={**cq, "kind": "BatchQueue"})),
        _dumps(_event(f"hx-unk-k2-{n}", object={**cq, "kind": "Pod"})),
        _dumps(_event(f"hx-unk-a-{n}", object={**cq, "apiVersion": "evil.example.com/v9"})),
        _dumps(_event(f"hx-unk-a2-{n}", object={**cq, "apiVersion": "kueue.x-k8s.io/v9"})),
        _dumps(_event(f"hx-unk-v-{n}", "Tick", v=2)),
        _dumps(_event(f"hx-unk-v0-{n}", "Tick", v=0)),
        _dumps(_event(f"hx-unk-v9-{n}", "Tick", v=2**70)),
    ])


def _quantity_events(n: str, qty: Any) -> list[dict]:
    return [_event(f"hx-q-cq-{n}", object=_cluster_queue(f"hx-q-{n}", groups=[_resource_group(qty)])),
            _event(f"hx-q-w-{n}", object=_workload("hx", f"hx-q-{n}", pod_sets=[_pod_set(cpu=qty)])),
            _event(f"hx-q-n-{n}", object={"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"hx-q-{n}"},
                                          "status": {"allocatable": {"memory": qty}}})]


def _bad_quantities(rng: random.Random, c: Context) -> Iterator:
    values: list[Any] = ["9" * 40, 2**80, "-1", -1, "-500m", "NaN", "Infinity", "-Inf", "1.5.5", "1Qi", "", " 1",
                         "0x10", "1e", "1" * 4301, "0" * 4400 + "1", "1e" + "0" * 4400 + "1", "1" * 4301 + "m"]
    for i, qty in enumerate(values):
        for event in _quantity_events(c.n(i), qty):
            yield _dumps(event), CLUSTER.encode()
    n = c.n()
    gpu = _workload("hx", f"hx-q-gpu-{n}", pod_sets=[{"name": "main", "count": 1, "requests": {"nvidia.com/gpu": "0.5"}}])
    yield _dumps(_event(f"hx-q-frac-{n}", object=gpu)), CLUSTER.encode()
    mem = _workload("hx", f"hx-q-mem-{n}", pod_sets=[{"name": "main", "count": 1, "requests": {"memory": "0.5"}}])
    yield _dumps(_event(f"hx-q-fracm-{n}", object=mem)), CLUSTER.encode()
    yield _dumps(_event(f"hx-q-cnt-{n}", object=_workload("hx", f"hx-q-cnt-{n}", pod_sets=[_pod_set(count=2**40)]))), \
        CLUSTER.encode()
    yield b'{"id":"hx-q-inf-' + n.encode() + b'","time":"' + TIME.encode() + \
        b'","cluster":"dlrm","type":"Applied","object":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload",' \
        b'"metadata":{"namespace":"hx","name":"hx-q-inf"},"spec":{"queueName":"hx-lq","podSets":[{"name":"main",' \
        b'"count":1,"requests":{"cpu":1e400}}]}}}', CLUSTER.encode()
    config = {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
              "spec": {"admissionFairSharing": {"usageHalfLifeTime": "1" * 5000 + "h"}}}
    yield _dumps(_event(f"hx-q-dur-{n}", object=config)), CLUSTER.encode()
    config = _set(config, ("spec", "admissionFairSharing", "usageHalfLifeTime"), "-1h")
    yield _dumps(_event(f"hx-q-dur2-{n}", object=config)), CLUSTER.encode()
    weighted = _cluster_queue(f"hx-q-wt-{n}", fairSharing={"weight": "1" * 4301})
    yield _dumps(_event(f"hx-q-wt-{n}", object=weighted)), CLUSTER.encode()
    weights = _set(config, ("spec", "admissionFairSharing"), {"resourceWeights": {"cpu": "1" * 4301}})
    yield _dumps(_event(f"hx-q-rw-{n}", object=weights)), CLUSTER.encode()


def _bad_times(rng: random.Random, c: Context) -> Iterator:
    for i, t in enumerate([2**63, 2**64, -(2**63) - 1, 1.7e12, 1735689600000.5, "2026-03-01T09:00:00",
                           "10000-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z",
                           "2026-03-01T25:00:00Z", "yesterday", "", "1735689600000", True]):
        yield _dumps({**_event(f"hx-t-{c.n(i)}", "Tick"), "time": t}), CLUSTER.encode()
    wl = _workload("hx", f"hx-t-w-{c.n()}")
    wl["metadata"]["creationTimestamp"] = "2026-02-30T00:00:00Z"
    yield _dumps(_event(f"hx-t-w-{c.n()}", object=wl)), CLUSTER.encode()


def _duplicates(rng: random.Random, c: Context) -> Iterator:
    for line in rng.sample(c.clean, 6):
        event = orjson.loads(line)
        event["time"] = TIME
        if event["type"] == "Applied":
            event["object"].setdefault("metadata", {})["labels"] = {"changed": "yes"}
        else:
            event["type"] = "Tick"
        yield _dumps(event), event["cluster"].encode()


def _batches(rng: random.Random, c: Context) -> Iterator:
    n = c.n()
    inner = [_event(f"hx-b-lq-{n}", object=_local_queue("hx", f"hx-b-{n}", "hx-cq")), _event(f"hx-b-t-{n}", "Tick")]
    yield from _keyed([
        _dumps(_event(f"hx-bb-{n}", "Batch", events=[*inner, _event(f"hx-bb-in-{n}", "Batch", events=inner)])),
        _dumps(_event(f"hx-be-{n}", "Batch", events=[])),
        _dumps(_event(f"hx-b1-{n}", "Batch", events=[*inner, _event(f"hx-b1-bad-{n}", object={"kind": 7})])),
        _dumps(_event(f"hx-b2-{n}", "Batch", events=[*inner, _event(f"hx-b2-bad-{n}", "Tick", time="never")])),
        _dumps(_event(f"hx-b3-{n}", "Batch", events=[*inner, "not an event"])),
    ])


def _webhook(rng: random.Random, c: Context) -> Iterator:
    n = c.n()
    rg = _resource_group()
    objects = [
        _cluster_queue(f"hx-wh1-{n}", cohort=None, groups=[_resource_group(borrowingLimit="1")]),
        _cluster_queue(f"hx-wh2-{n}", cohort=None, groups=[_resource_group(lendingLimit="1")]),
        _cluster_queue(f"hx-wh3-{n}", groups=[_resource_group("2", lendingLimit="3")]),
        _cluster_queue(f"hx-wh4-{n}", groups=[{"coveredResources": ["cpu", "memory"], "flavors": rg["flavors"]}]),
        _cluster_queue(f"hx-wh5-{n}", groups=[{"coveredResources": ["cpu"], "flavors": rg["flavors"] * 2}]),
        _cluster_queue(f"hx-wh6-{n}", groups=[rg, rg]),
        _cluster_queue(f"hx-wh7-{n}", groups=[_resource_group("1", borrowingLimit="-1")]),
        _cluster_queue(f"hx-wh8-{n}", fairSharing={"weight": "-1"}),
        _cohort(f"hx-wh9-{n}", resourceGroups=[_resource_group(borrowingLimit="1")]),
        _workload("hx", f"hx-wh10-{n}", pod_sets=[_pod_set(), _pod_set()]),
        _workload("hx", f"hx-wh11-{n}", pod_sets=[{**_pod_set(count=2), "minCount": 3}]),
        _workload("hx", f"hx-wh12-{n}", pod_sets=[]),
        _workload("hx", f"hx-wh13-{n}", pod_sets=[{**_pod_set(), "template": {"spec": {"containers": []}}}]),
        _workload("hx", f"hx-wh14-{n}", pod_sets=[_pod_set(count=-1)]),
        _workload("hx", f"hx-wh15-{n}", priority=2**31),
    ]
    for i, obj in enumerate(objects):
        yield _dumps(_event(f"hx-wh-{c.n(i)}", object=obj)), CLUSTER.encode()


def _big_text(rng: random.Random, c: Context) -> Iterator:
    big = "a" * c.scale.big_text
    n = c.n()
    yield from _keyed([
        _dumps(_event(big[:-8] + n[-8:].rjust(8, "0"), "Tick")),
        _dumps(_event(f"hx-bn-{n}", object=_cluster_queue(big))),
        _dumps(_event(f"hx-bn2-{n}", object=_local_queue(big, "lq", "hx-cq"))),
        _dumps(_event(f"hx-bn3-{n}", object=_workload("hx", f"hx-bn3-{n}", queue=big))),
    ])
    yield _dumps(_event(f"hx-bc-{n}", "Tick", cluster=big)), big.encode()


def _long_keys(rng: random.Random, c: Context) -> Iterator:
    text = "k" * 2700
    n = c.n()
    yield from _keyed([
        _dumps(_event(f"{text}-{n}", "Tick")),
        _dumps(_event(f"hx-lk-{n}", object=_cluster_queue(f"{text}-{n}"))),
        _dumps(_event(f"hx-lk2-{n}", object=_cohort(f"hx-lk2-{n}", parent=text))),
    ])
    yield _dumps(_event(f"hx-lkc-{n}", "Tick", cluster=f"{text}-{n}")), f"{text}-{n}".encode()


def _nul(rng: random.Random, c: Context) -> Iterator:
    n = c.n()
    yield from _keyed([
        _dumps(_event(f"hx-nul\0{n}", "Tick")),
        _dumps(_event(f"hx-nul-{n}", object=_cluster_queue(f"hx-nul\0{n}"))),
        _dumps(_event(f"hx-nul2-{n}", object=_workload("hx\0", f"hx-nul2-{n}"))),
        _dumps(_event(f"hx-nul3-{n}", f"Tick\0{n}")),
        _dumps(_event(f"hx-nul4-{n}", "Exploded", reason="\0" * 8)),
    ])
    yield _dumps(_event(f"hx-nul5-{n}", "Tick", cluster=f"dl\0rm-{n}")), f"dl\0rm-{n}".encode()


SQL = ["x'); DROP TABLE events; --", "\"; DELETE FROM dead_letters; --", "' OR '1'='1", "%s%s%s", "$1", "\\x00",
       "a`b", "name\"with'quotes"]
PRINTABLE = ["\U0001f680rocket", "Ünïcödé", "名前", "a\u0301", "UPPER", "-leading", "trailing-", "dot..dot"]
"""Printable text that is no Kubernetes name (a valid id or cluster name)."""
UNPRINTABLE = ["\u202eevil", "zero\u200bwidth", "\ufeffbom", "line\nbreak", "tab\tname", "nbsp\u00a0", "del\x7f",
               "esc\x1b[31m"]
"""Control, format (RTL override, zero-width, BOM) and separator characters: in no name, id or cluster."""
UNICODE = PRINTABLE + UNPRINTABLE


def _names(tag: str, values: list[str]) -> Make:
    def make(rng: random.Random, c: Context) -> Iterator:
        for i, name in enumerate(values):
            n = f"{tag}-{c.n(i)}"
            obj = rng.choice([_cluster_queue(name), _cohort(name), _local_queue("hx", name, "hx-cq"),
                              _local_queue(name, "lq", "hx-cq"), _workload("hx", name), _workload(name, "w")])
            yield _dumps(_event(f"hx-name-{n}", object=obj)), CLUSTER.encode()
    return make


def _unprintable_ids(rng: random.Random, c: Context) -> Iterator:
    for i, text in enumerate(UNPRINTABLE):
        yield _dumps(_event(f"{text}-{c.n(i)}", "Tick")), CLUSTER.encode()
        yield _dumps(_event(f"hx-upc-{c.n(i)}", "Tick", cluster=text)), text.encode()


def _wrong_cluster(rng: random.Random, c: Context) -> Iterator:
    for i, cluster in enumerate([7, [], {"name": "dlrm"}, True, "", ["dlrm"], 1.5]):
        yield _dumps(_event(f"hx-wc-{c.n(i)}", "Tick", cluster=cluster)), CLUSTER.encode()


def _many_flavors(rng: random.Random, c: Context) -> Iterator:
    cq = _cluster_queue(f"hx-flv-{c.n()}", groups=[_resource_group("1", flavors=c.scale.flavors)])
    yield _dumps(_event(f"hx-flv-{c.n()}", object=cq)), CLUSTER.encode()


def _big_batch(rng: random.Random, c: Context) -> Iterator:
    n = c.n()
    inner = b",".join(b'{"id":"hx-bb-%d","type":"Tick"}' % i for i in range(c.scale.batch_events))
    yield (b'{"id":"hx-bigbatch-' + n.encode() + b'","time":"' + TIME.encode() + b'","cluster":"dlrm","type":"Batch",'
           b'"events":[' + inner + b"]}"), CLUSTER.encode()


def _many_pod_sets(rng: random.Random, c: Context) -> Iterator:
    pod_sets = [_pod_set(f"p{i}") for i in range(c.scale.pod_sets)]
    yield _dumps(_event(f"hx-ps-{c.n()}", object=_workload("hx", f"hx-ps-{c.n()}", pod_sets=pod_sets))), \
        CLUSTER.encode()


def _unknown_clusters(rng: random.Random, c: Context) -> Iterator:
    count = c.scale.unknown_clusters // c.scale.copies
    for i in range(count):
        cluster = f"ghost-{c.round}-{i}"
        yield _dumps({"id": f"g-{i}", "time": TIME, "cluster": cluster, "type": "Exploded"}), cluster.encode()


def _kafka_null_keys(rng: random.Random, c: Context) -> Iterator:
    for value, _ in _malformed(rng, c):
        yield value, None


def _kafka_binary(rng: random.Random, c: Context) -> Iterator:
    for size in (1, 16, 4096):
        yield bytes(rng.getrandbits(8) for _ in range(size)), CLUSTER.encode()
    yield b"\x00" * 64, CLUSTER.encode()
    yield b"\x1f\x8b\x08\x00" + bytes(rng.getrandbits(8) for _ in range(60)), CLUSTER.encode()


def _kafka_tombstones(rng: random.Random, c: Context) -> Iterator:
    yield None, CLUSTER.encode()
    yield b"", CLUSTER.encode()
    yield b"", None  # a client cannot send a tombstone without a key


def _kafka_big(rng: random.Random, c: Context) -> Iterator:
    yield _dumps(_event(f"hx-k5-{c.n()}", "Tick", annotations={"pad": "x" * c.scale.kafka_value})), CLUSTER.encode()


def _kafka_bad_keys(rng: random.Random, c: Context) -> Iterator:
    for key in (b"\xff\xfe not utf-8", b"\x00", b"\xc3", "x'); DROP TABLE events; --".encode(), b"k" * 4000):
        yield _dumps({"id": f"hx-kk-{c.n()}", "time": TIME, "type": "Exploded"}), key


class Category(NamedTuple):
    """A row of the category table: its name, its generator, whether it is made once per corpus
    (the size categories) or once per round, whether it goes through the file channels and Kafka,
    and the outcome of its lines."""

    name: str
    make: Make
    once: bool = False
    file: bool = True
    kafka: bool = True
    outcome: str = REJECTED


CATEGORIES = [
    Category("malformed JSON", _malformed),
    Category("non-UTF-8 bytes", _non_utf8),
    Category("byte order mark", _bom),
    Category("top-level non-objects", _non_objects),
    Category("10 MB line", _huge_line, once=True),
    Category("100,000-level nesting", _nesting, once=True),
    Category("wrong types in every field", _wrong_types),
    Category("missing required fields", _missing),
    Category("unknown type, kind, apiVersion, v", _unknown),
    Category("bad quantities (huge, negative, NaN, fractional, > 4,300 digits)", _bad_quantities),
    Category("bad times", _bad_times),
    Category("duplicate ids with different content", _duplicates, outcome=DUPLICATE),
    Category("Batch in Batch, empty Batch, one bad inner event", _batches),
    Category("webhook-rule violations", _webhook),
    Category("1 MB ids and names", _big_text, once=True),
    Category("2.7 kB ids, names and clusters", _long_keys),
    Category("NUL characters", _nul),
    Category("SQL metacharacters and quotes in names", _names("sql", SQL)),
    Category("unicode, RTL, emoji, zero-width in names", _names("uni", UNICODE)),
    Category("unprintable ids and clusters (RTL, zero-width, BOM, control)", _unprintable_ids),
    Category("cluster of the wrong type", _wrong_cluster),
    Category("10,000 flavors", _many_flavors, once=True),
    Category("1,000,000-event Batch", _big_batch, once=True),
    Category("100,000 podSets", _many_pod_sets, once=True),
    Category("thousands of distinct unknown clusters", _unknown_clusters),
    Category("Kafka: null keys", _kafka_null_keys, file=False),
    Category("Kafka: binary values", _kafka_binary, file=False),
    Category("Kafka: tombstones and empty values", _kafka_tombstones, file=False),
    Category("Kafka: 5 MB values", _kafka_big, once=True, file=False),
    Category("Kafka: non-UTF-8 and hostile keys", _kafka_bad_keys, file=False),
]
"""Every hostile category, in table order."""


# --------------------------------------------------------------------------- the edge section (valid)

EDGE_CLUSTERS = ("edge-times", "edge-cycle", "edge-chain", "edge-dangling", "edge-noop", "edge-ids", "edge-numbers")


def _edge(scale: Scale) -> list[tuple[str, bytes]]:
    """``(category, line)`` of the edge section: valid events that look hostile (module docstring),
    each category in its own cluster, in order."""
    out: list[tuple[str, bytes]] = []

    def add(category: str, cluster: str, eid: str, time: Any, etype: str = "Applied", **fields: Any) -> None:
        out.append((category, _dumps({"id": eid, "time": time, "cluster": cluster, "type": etype, **fields})))

    cat = "edge-valid times (year 1, year 9999, -1 ms)"
    add(cat, "edge-times", "t-minus-1ms", -1, "Tick")
    add(cat, "edge-times", "t-year-1", "0001-01-01T00:00:00Z", "Tick")
    add(cat, "edge-times", "t-year-9999", "9999-12-31T23:59:59.999Z", "Tick")
    add(cat, "edge-times", "t-year-1-again", "0001-01-01T00:00:00+00:00", "Tick")

    cat = "cohort cycles and self-parents (valid: the tree stops admitting)"
    t = 1_735_689_600_000
    flavor = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f0"}}
    add(cat, "edge-cycle", "rf", t, object=flavor)
    add(cat, "edge-cycle", "co-a", t, object=_cohort("a", "b"))
    add(cat, "edge-cycle", "co-b", t, object=_cohort("b", "a"))
    add(cat, "edge-cycle", "co-self", t, object=_cohort("self", "self"))
    add(cat, "edge-cycle", "cq-a", t, object=_cluster_queue("cq-a", cohort="a"))
    add(cat, "edge-cycle", "cq-self", t, object=_cluster_queue("cq-self", cohort="self"))
    add(cat, "edge-cycle", "lq-a", t, object=_local_queue("ns", "lq-a", "cq-a"))
    add(cat, "edge-cycle", "lq-self", t, object=_local_queue("ns", "lq-self", "cq-self"))
    add(cat, "edge-cycle", "w-a", t + 1, object=_workload("ns", "w-a", queue="lq-a"))
    add(cat, "edge-cycle", "w-self", t + 1, object=_workload("ns", "w-self", queue="lq-self"))

    cat = "deep cohort parent chain (valid)"
    add(cat, "edge-chain", "rf", t, object=flavor)
    add(cat, "edge-chain", "c0", t, object=_cohort("c0", resourceGroups=[_resource_group("4")]))
    for i in range(1, scale.chain_depth):
        add(cat, "edge-chain", f"c{i}", t, object=_cohort(f"c{i}", f"c{i - 1}"))
    add(cat, "edge-chain", "leaf", t, object=_cluster_queue("leaf", cohort=f"c{scale.chain_depth - 1}",
                                                             groups=[_resource_group("0")]))
    add(cat, "edge-chain", "lq", t, object=_local_queue("ns", "lq", "leaf"))
    add(cat, "edge-chain", "w", t + 1, object=_workload("ns", "w", queue="lq", pod_sets=[_pod_set(cpu="3")]))

    cat = "dangling references (valid: pending)"
    add(cat, "edge-dangling", "lq", t, object=_local_queue("ns", "lq", "missing-cq"))
    add(cat, "edge-dangling", "w-lq", t + 1, object=_workload("ns", "w-lq", queue="lq"))
    add(cat, "edge-dangling", "w-none", t + 1, object=_workload("ns", "w-none", queue="missing-lq"))

    cat = "deletes of missing objects, lifecycle of unknown workloads (valid no-ops)"
    add(cat, "edge-noop", "rf", t, object=flavor)
    add(cat, "edge-noop", "cq", t, object=_cluster_queue("cq", cohort=None, groups=[_resource_group("1")]))
    add(cat, "edge-noop", "lq", t, object=_local_queue("ns", "lq", "cq"))
    add(cat, "edge-noop", "w1", t + 1, object=_workload("ns", "w1", queue="lq"))
    add(cat, "edge-noop", "w2", t + 2, object=_workload("ns", "w2", queue="lq"))
    for i, (kind, ns) in enumerate([("ClusterQueue", None), ("Cohort", None), ("LocalQueue", "ns"), ("Workload", "ns"),
                                    ("ResourceFlavor", None), ("Node", None)]):
        meta = {"name": "ghost", **({"namespace": ns} if ns else {})}
        add(cat, "edge-noop", f"del-{i}", t + 3, "Deleted",
            object={"apiVersion": "v1" if kind == "Node" else API, "kind": kind, "metadata": meta})
    add(cat, "edge-noop", "fin-ghost", t + 4, "WorkloadFinished", workload="ns/ghost")
    add(cat, "edge-noop", "evict-ghost", t + 4, "WorkloadEvicted", workload="ns/ghost", reason="Preempted")
    add(cat, "edge-noop", "admit-ghost", t + 4, "WorkloadAdmitted", workload="ns/ghost", admission={
        "clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1, "flavors": {"cpu": "f0"},
                                                     "resourceUsage": {"cpu": "1"}}]})

    cat = "ids of SQL metacharacters, quotes, emoji, non-ASCII letters (valid)"
    for i, eid in enumerate([*SQL, *PRINTABLE]):
        add(cat, "edge-ids", eid, t + i, "Tick")

    cat = "JSON numbers PostgreSQL normalises (1e2, -0.0)"
    out.append((cat, b'{"id":"n1","time":1735689600000,"cluster":"edge-numbers","type":"Tick","x":1e2,"y":-0.0}'))
    out.append((cat, b'{"id":"n2","time":1735689600001,"cluster":"edge-numbers","type":"Tick","z":[1E+2,0.10,-0]}'))
    out.append((cat, b'{"id":"n3","time":1735689600002,"cluster":"edge-numbers","type":"Applied","object":{'
                     b'"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"f",'
                     b'"annotations":{"a":"1"}},"spec":{"nodeLabels":{}},"status":{"x":1.0e2,"y":-0.0}}}'))
    return out


EDGE_CATEGORIES = tuple(dict.fromkeys(category for category, _ in _edge(Scale(copies=1, chain_depth=2))))
"""The edge section's categories, in order."""


# --------------------------------------------------------------------------- assembling


def simulation(path: Path) -> list[bytes]:
    """The closed-loop simulation of the DLRM trace slice (hourly ticks), written to ``path``, as lines."""
    trace = import_dlrm(DATA / "dlrm_slice.csv")
    simulate(trace, generate_quota(trace), path, tick_ms=parse_duration("1h", "tick"))
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def _recluster(lines: list[bytes], cluster: str) -> list[bytes]:
    out = []
    for line in lines:
        event = orjson.loads(line)
        event["cluster"] = cluster
        out.append(_dumps(event))
    return out


def build(scale: Scale, simulated: list[bytes], seed: int = SEED) -> Corpus:
    """The corpus at ``scale`` over ``simulated`` (``simulation``'s lines); see the module docstring.

    The clean history is the simulation (round robin over its ``scale.clean_clusters`` copies)
    merged with the edge section at random places (each cluster's order is kept).  Each hostile
    line is inserted at a random place after every line whose id it may repeat.
    """
    rng = random.Random(seed)
    copies = [simulated] + [_recluster(simulated, f"{CLUSTER}-{i}") for i in range(1, scale.clean_clusters)]
    base = [Line(CLEAN, line, orjson.loads(line)["cluster"].encode(), APPLIED, True, True)
            for group in zip(*copies) for line in group]
    edge = [Line(category, line, orjson.loads(line)["cluster"].encode(), APPLIED, True, True)
            for category, line in _edge(scale)]
    clean = _merge(rng, base, edge)

    hostile: list[Line] = []
    plain = [line.value for line in base[:len(simulated)] if line.value is not None]
    for r in range(scale.copies):
        context = Context(scale, r, plain)
        for category in CATEGORIES:
            if category.once and r:
                continue
            for value, key in category.make(rng, context):
                size = 0 if value is None else len(value)
                hostile.append(Line(category.name, value, key, category.outcome, category.file and value is not None
                                    and bool(value.strip()), category.kafka and size <= scale.kafka_max))
    index = {_identity(line.value): i for i, line in enumerate(clean) if line.category == CLEAN}
    slots: list[tuple[int, int, Line]] = [(i, 0, line) for i, line in enumerate(clean)]
    for n, line in enumerate(hostile):
        after = 0
        if line.outcome == DUPLICATE:
            after = index[_identity(line.value)] + 1
        slots.append((rng.randint(after, len(clean)), 1 + n, line))
    slots.sort(key=lambda s: (s[0], s[1]))
    return Corpus(clean, [line for _, _, line in slots])


def _identity(value: bytes | None) -> tuple[str, str]:
    """``(cluster, id)`` of a line that is a valid event."""
    event = orjson.loads(value or b"")
    return event["cluster"], event["id"]


def _merge(rng: random.Random, a: list[Line], b: list[Line]) -> list[Line]:
    """``a`` and ``b`` merged at random places, each in its own order."""
    picks = sorted(rng.sample(range(len(a) + len(b)), len(b)))
    out, ia, ib = [], 0, 0
    for i in range(len(a) + len(b)):
        if ib < len(picks) and picks[ib] == i:
            out.append(b[ib])
            ib += 1
        else:
            out.append(a[ia])
            ia += 1
    return out


def expected(lines: list[Line], outcome: str) -> collections.Counter:
    """How many of ``lines`` have ``outcome``, per category."""
    return collections.Counter(line.category for line in lines if line.outcome == outcome)


def write_file(lines: list[Line], path: Path) -> list[Line]:
    """Write the file channels' lines of ``lines`` as NDJSON to ``path``; returns them, so that the
    ``n``-th returned line is line ``n + 1`` of the file."""
    kept = [line for line in lines if line.file]
    with path.open("wb") as out:
        for line in kept:
            assert line.value is not None and b"\n" not in line.value
            out.write(line.value + b"\n")
    return kept
