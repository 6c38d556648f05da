"""The node inventory (``statemodel.placement.nodes``): the cluster capacity over schedulable nodes,
kept through adds, replacements, deletions and ``spec.unschedulable`` toggles; labels and taints
kept as given; the state JSON's ``nodes`` / ``capacity``; the ledger's snapshot document."""

from __future__ import annotations

import zlib

import orjson
import pytest

from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from statemodel.objects import Node, Taint
from statemodel.placement.nodes import NodeLedger
from statemodel.snapshot import _enc, dump, load
from tests.scenario.builder import Scenario
from tests.paths import DATA

GI = 1024**3
GPU = "nvidia.com/gpu"


def node(name: str, unschedulable: bool = False, gpu: int = 0, **allocatable: int) -> Node:
    """A Node with ``allocatable`` (and ``gpu`` as nvidia.com/gpu), one label and one taint."""
    if gpu:
        allocatable[GPU] = gpu
    return Node(name, (("zone", "a"),), tuple(sorted(allocatable.items())), unschedulable,
                (Taint("gpu", "true", "NoSchedule"),))


# Each case: the operations applied in order ("apply", Node) / ("delete", name), then the expected
# totals (resource -> base units, resources summing to 0 absent) and node names.
CASES = {
    "empty": ([], {}, []),
    "one node": ([("apply", node("n1", cpu=4000, memory=16 * GI))], {"cpu": 4000, "memory": 16 * GI}, ["n1"]),
    "two nodes add up": (
        [("apply", node("n2", cpu=4000, pods=110)), ("apply", node("n1", cpu=8000, memory=GI))],
        {"cpu": 12000, "memory": GI, "pods": 110}, ["n1", "n2"]),
    "replace takes the new allocatable": (
        [("apply", node("n1", cpu=4000, memory=GI)), ("apply", node("n2", cpu=1000)),
         ("apply", node("n1", cpu=6000, pods=10))],
        {"cpu": 7000, "pods": 10}, ["n1", "n2"]),
    "delete removes its share": (
        [("apply", node("n1", cpu=4000)), ("apply", node("n2", cpu=1000, memory=GI)), ("delete", "n2")],
        {"cpu": 4000}, ["n1"]),
    "delete of an unknown node is a no-op": ([("apply", node("n1", cpu=4000)), ("delete", "nx")], {"cpu": 4000}, ["n1"]),
    "unschedulable node does not count": (
        [("apply", node("n1", cpu=4000)), ("apply", node("n2", True, cpu=8000, memory=GI))], {"cpu": 4000}, ["n1", "n2"]),
    "cordon then uncordon": (
        [("apply", node("n1", cpu=4000, gpu=8)), ("apply", node("n2", cpu=2000)),
         ("apply", node("n1", True, cpu=4000, gpu=8))],
        {"cpu": 2000}, ["n1", "n2"]),
    "uncordoned node counts again": (
        [("apply", node("n1", True, cpu=4000, gpu=8)), ("apply", node("n1", cpu=4000, gpu=8))],
        {"cpu": 4000, GPU: 8}, ["n1"]),
    "delete of an unschedulable node changes nothing": (
        [("apply", node("n1", cpu=4000)), ("apply", node("n2", True, cpu=8000)), ("delete", "n2")], {"cpu": 4000}, ["n1"]),
    "all gone": ([("apply", node("n1", cpu=4000)), ("delete", "n1")], {}, []),
}


@pytest.mark.parametrize("ops, totals, names", CASES.values(), ids=CASES.keys())
def test_totals(ops, totals, names):
    ledger = NodeLedger()
    for op, arg in ops:
        if op == "apply":
            ledger.apply(arg)
        else:
            ledger.delete(arg)
    assert ledger.totals() == totals
    assert list(ledger.totals()) == sorted(totals)
    for resource in ("cpu", "memory", "pods", GPU, "example.com/none"):
        assert ledger.total(resource) == totals.get(resource, 0)
    assert ledger.names() == names == [n.name for n in ledger.nodes()]
    assert len(ledger) == len(names) and all(name in ledger for name in names)
    assert NodeLedger.from_document(orjson.loads(orjson.dumps(ledger.document()))).totals() == totals


def test_delete_returns_the_node():
    ledger = NodeLedger()
    n1 = node("n1", cpu=1)
    ledger.apply(n1)
    assert ledger.get("n1") is n1 and ledger.delete("n1") is n1
    assert ledger.get("n1") is None and ledger.delete("n1") is None


def v1_node(name: str, allocatable: dict, labels: dict | None = None, taints: list | None = None,
            unschedulable: bool | None = None) -> dict:
    spec: dict = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": {"allocatable": allocatable}}


def nodes_scenario() -> Scenario:
    """Nodes added, relabelled, cordoned, uncordoned and deleted, with the last-seen values below."""
    s = Scenario("lab")
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
              {"key": "maintenance", "effect": "PreferNoSchedule"}]
    s.emit("Applied", object=v1_node("gpu-2", {"cpu": "64", "memory": "512Gi", GPU: "8"}, {"pool": "gpu"}, taints))
    s.emit("Applied", object=v1_node("cpu-1", {"cpu": "7910m", "memory": "32Gi", "pods": "110"}, {"pool": "cpu"}))
    s.emit("Applied", object=v1_node("cpu-2", {"cpu": "8", "memory": "32Gi"}, {"pool": "cpu"}, unschedulable=True))
    s.emit("Applied", object=v1_node("gpu-1", {"cpu": "64", GPU: "8"}, {"pool": "gpu", "zone": "b"}))
    s.emit("Applied", object=v1_node("gpu-1", {"cpu": "64", GPU: "8"}, {"pool": "gpu", "zone": "b"}, unschedulable=True))
    s.emit("Applied", object=v1_node("cpu-2", {"cpu": "8", "memory": "32Gi"}, {"pool": "cpu", "zone": "c"}))
    s.emit("Applied", object=v1_node("tmp", {"cpu": "1"}))
    s.emit("Deleted", object={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "tmp"}})
    return s


def test_state_json_lists_the_nodes_and_the_capacity():
    state = nodes_scenario().state()
    assert list(state["nodes"]) == ["cpu-1", "cpu-2", "gpu-1", "gpu-2"]
    assert state["nodes"]["gpu-2"] == {
        "allocatable": {"cpu": 64000, "memory": 512 * GI, GPU: 8}, "allocated": {}, "labels": {"pool": "gpu"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                   {"key": "maintenance", "value": "", "effect": "PreferNoSchedule"}],
        "unschedulable": False, "workloads": []}
    assert state["nodes"]["cpu-2"]["labels"] == {"pool": "cpu", "zone": "c"}
    assert state["nodes"]["gpu-1"]["unschedulable"] is True
    # schedulable: cpu-1, cpu-2 and gpu-2 (gpu-1 cordoned, tmp deleted)
    assert state["capacity"] == {"cpu": 7910 + 8000 + 64000, "memory": 32 * GI + 32 * GI + 512 * GI,
                                 GPU: 8, "pods": 110}


@pytest.mark.parametrize("cut", range(9))
def test_snapshot_plus_tail_equals_full_replay(cut):
    s = nodes_scenario()
    events = [parse_event(e) for e in s.events]
    full = Engine()
    for e in events:
        full.apply(e)
    head = Engine()
    for e in events[:cut]:
        head.apply(e)
    restored = load(dump(head))
    assert dump(restored) == dump(head)
    for e in events[cut:]:
        restored.apply(e)
    assert restored.hash == full.hash
    assert orjson.dumps(restored.state()) == orjson.dumps(full.state())
    assert restored.clusters["lab"].nodes.totals() == full.clusters["lab"].nodes.totals()


def test_snapshot_keeps_the_ledger_as_its_own_component():
    s = nodes_scenario()
    s.run()
    doc = orjson.loads(zlib.decompress(dump(s.engine)))
    component = doc["clusters"][0]["components"]["nodes"]
    assert component["version"] == 1
    assert component["nodes"][0] == {
        "name": "cpu-1", "labels": {"pool": "cpu"}, "allocatable": {"cpu": 7910, "memory": 32 * GI, "pods": 110},
        "unschedulable": False, "taints": []}


def test_snapshot_of_the_earlier_node_encoding_still_loads():
    """Format-1 snapshots (written before the ledger wrote its own document) list each node in the
    generic object encoding of ``statemodel.snapshot`` (class name, then fields; tuples as
    ``{"t": [...]}``) inside the one flat cluster document; the format upgrade turns them into the
    ledger's component."""
    doc = orjson.loads(zlib.decompress((DATA / "snapshot-format1" / "after-18.snapshot").read_bytes()))
    assert doc["format"] == 1
    gpu_2 = Node("gpu-2", (("pool", "gpu"),), (("cpu", 64000), (GPU, 8)), False,
                 (Taint("nvidia.com/gpu", "present", "NoSchedule"),))
    cordoned = Node("cpu-1", (), (("cpu", 1000),), True, ())
    doc["clusters"][0]["nodes"] = orjson.loads(orjson.dumps([_enc(gpu_2), _enc(cordoned)]))
    assert doc["clusters"][0]["nodes"][1] == ["Node", "cpu-1", {"t": []}, {"t": [{"t": ["cpu", 1000]}]}, True, {"t": []}]
    restored = load(zlib.compress(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)))
    ledger = restored.clusters[doc["clusters"][0]["name"]].nodes
    assert ledger.names() == ["cpu-1", "gpu-2"]
    assert ledger.get("gpu-2") == gpu_2 and ledger.get("cpu-1") == cordoned
    assert ledger.totals() == {"cpu": 64000, GPU: 8}
