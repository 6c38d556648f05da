"""Node inventories as events (``replay.sim.importers.{openb,lingjun,node_mapping}``, ``replay.sim.nodes``).

Counts on the real files are the ones their READMEs publish (``shared/data/traces/*/README.md``),
counted there by hand from the CSVs; a hand-written CSV checks the node mapping field by field.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from replay.sim.importers.jobs import BadRow, TraceImportError
from replay.sim.importers.lingjun import ASW_LABEL, DSW_LABEL, PSW_LABEL, read_topology
from replay.sim.importers.mapping import MappingError
from replay.sim.importers.node_mapping import import_nodes, load_node_mapping
from replay.sim.importers.openb import MODEL_LABEL, NODES_FILE, read_nodes
from replay.sim.manifests import QuotaConfig
from replay.sim.nodes import enable_placement, load_nodes
from replay.sim.traces import trace_dir
from tests.paths import MAPPINGS

GIB = 1 << 30


def _openb_nodes() -> Path:
    try:
        return trace_dir("openb") / NODES_FILE
    except TraceImportError:
        pytest.skip("the openb trace is not shipped (its terms): needs shared/data/traces or $QUOTALEDGER_TRACES")


def _lingjun() -> Path:
    try:
        return trace_dir("lingjun")
    except TraceImportError:
        pytest.skip("the node inventories are not shipped: needs shared/data/traces or $QUOTALEDGER_TRACES")


def test_openb_node_list_has_its_1523_nodes_by_model() -> None:
    inv = read_nodes(_openb_nodes())
    assert len(inv.nodes) == 1523 and inv.bad_rows == []
    # README: G2 549, T4 404, P100 134, V100M16 55, G3 39, V100M32 30, A10 2, CPU-only 310
    models = Counter(n["metadata"]["labels"][MODEL_LABEL] for n in inv.nodes)
    assert models == {"G2": 549, "T4": 404, "P100": 134, "V100M16": 55, "G3": 39, "V100M32": 30, "A10": 2, "none": 310}
    # one flavor per model, selecting it by the node label
    assert {f["metadata"]["name"]: f["spec"]["nodeLabels"] for f in inv.flavors}["gpu-v100m32"] == {MODEL_LABEL: "V100M32"}
    assert [f["metadata"]["name"] for f in inv.flavors][0] == "cpu-only"
    assert sum(inv.capacity[f]["nvidia.com/gpu"] for f in inv.capacity) == sum(
        int(n["status"]["allocatable"]["nvidia.com/gpu"]) for n in inv.nodes)
    assert inv.topologies == []


def test_lingjun_topology_has_its_hosts_spines_and_racks() -> None:
    inv = read_topology(_lingjun())
    # README: 847 hosts, 1 DSW, 3 PSWs, 119 distinct (PSW, ASW) pairs; ASW names reused under PSWs
    assert len(inv.nodes) == 847 and inv.bad_rows == []
    labels = [n["metadata"]["labels"] for n in inv.nodes]
    assert {lb[DSW_LABEL] for lb in labels} == {"G6"}
    assert Counter(lb[PSW_LABEL] for lb in labels) == {"P10": 362, "P12": 306, "P8": 179}
    assert len({(lb[PSW_LABEL], lb[ASW_LABEL]) for lb in labels}) == 119
    assert len({lb[ASW_LABEL] for lb in labels}) < 119
    assert all(lb["kubernetes.io/hostname"] == n["metadata"]["name"] for lb, n in zip(labels, inv.nodes))
    assert len({n["metadata"]["name"] for n in inv.nodes}) == 847
    # 8-GPU hosts (the Crux paper): 847 × 8 = 6,776 GPUs
    assert inv.capacity == {"lingjun-gpu": {"nvidia.com/gpu": 6776}}
    (topo,) = inv.topologies
    assert topo["apiVersion"] == "kueue.x-k8s.io/v1alpha1" and topo["metadata"]["name"] == "lingjun"
    assert [lv["nodeLabel"] for lv in topo["spec"]["levels"]] == [DSW_LABEL, PSW_LABEL, ASW_LABEL,
                                                                   "kubernetes.io/hostname"]
    assert inv.flavors[0]["spec"] == {"nodeLabels": {"quotaledger.io/pool": "lingjun"}, "topologyName": "lingjun"}


def test_first_lingjun_row_becomes_this_node() -> None:
    inv = read_topology(_lingjun())
    # line 2: 0c9d9de1b19e7f39…,G6,P10,S14
    assert inv.nodes[0] == {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "lingjun-0c9d9de1b19e",
        "labels": {DSW_LABEL: "G6", PSW_LABEL: "P10", ASW_LABEL: "S14", "quotaledger.io/pool": "lingjun",
                   "kubernetes.io/hostname": "lingjun-0c9d9de1b19e"}},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


@pytest.mark.parametrize("which", ["openb", "lingjun"])
def test_shipped_node_mappings_give_the_dedicated_importers_objects_byte_for_byte(which: str) -> None:
    if which == "openb":
        path, dedicated = _openb_nodes(), read_nodes(_openb_nodes())
    else:
        path, dedicated = _lingjun() / "alibaba-lingjun-2023_topo.csv", read_topology(_lingjun())
    mapped = import_nodes(path, MAPPINGS / f"{which}-nodes.yaml")
    for a, b in ((dedicated.nodes, mapped.nodes), (dedicated.flavors, mapped.flavors),
                 (dedicated.topologies, mapped.topologies)):
        assert [orjson.dumps(x) for x in a] == [orjson.dumps(x) for x in b]
    assert dedicated.capacity == mapped.capacity


LAB_CSV = """host,cores,mem_gb,gpus,model,rack
a1,32,256,8,A100,r1
a2,32,256,8,A100,r1
b1,16,64,0,,r2
bad,x,64,0,,r2
a1,8,8,0,,r2
c1,16,,0,T4,r3
t1,16,64,4,T4,
"""

LAB_MAPPING = """version: 1
name: lab
node: {column: host, prefix: lab-}
allocatable:
  - {column: cores, resource: cpu, unit: cores}
  - {column: mem_gb, resource: memory, unit: GiB}
  - {column: gpus, resource: nvidia.com/gpu, unit: count, when: {column: gpus, not_in: [0]}}
  - {value: 1, resource: example.com/nic, unit: count}
labels:
  - {label: quotaledger.io/gpu-model, column: model, empty: none}
  - {label: example.com/rack, column: rack}
flavor: {label: quotaledger.io/gpu-model, prefix: gpu-, map: {none: cpu-only}}
topology: {name: lab, levels: [example.com/rack, kubernetes.io/hostname]}
"""


def test_a_node_mapping_reads_a_generic_csv(tmp_path: Path) -> None:
    (tmp_path / "nodes.csv").write_text(LAB_CSV)
    (tmp_path / "nodes.yaml").write_text(LAB_MAPPING)
    inv = import_nodes(tmp_path / "nodes.csv", tmp_path / "nodes.yaml")
    assert inv.name == "lab"
    assert [n["metadata"]["name"] for n in inv.nodes] == ["lab-a1", "lab-a2", "lab-b1", "lab-t1"]
    assert inv.nodes[0] == {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "lab-a1", "labels": {
        "quotaledger.io/gpu-model": "A100", "example.com/rack": "r1", "kubernetes.io/hostname": "lab-a1"}},
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "example.com/nic": "1"}}}
    # b1: no GPU column entry (when: not 0), model empty -> "none"; t1: rack empty -> no rack label
    assert inv.nodes[2]["status"]["allocatable"] == {"cpu": "16", "memory": "64Gi", "example.com/nic": "1"}
    assert inv.nodes[2]["metadata"]["labels"]["quotaledger.io/gpu-model"] == "none"
    assert "example.com/rack" not in inv.nodes[3]["metadata"]["labels"]
    assert inv.bad_rows == [BadRow(5, "cores: not a number: 'x'"),
                            BadRow(6, "host: node name lab-a1 already taken by line 2"),
                            BadRow(7, "mem_gb: empty")]
    assert [(f["metadata"]["name"], f["spec"]) for f in inv.flavors] == [
        ("cpu-only", {"nodeLabels": {"quotaledger.io/gpu-model": "none"}, "topologyName": "lab"}),
        ("gpu-a100", {"nodeLabels": {"quotaledger.io/gpu-model": "A100"}, "topologyName": "lab"}),
        ("gpu-t4", {"nodeLabels": {"quotaledger.io/gpu-model": "T4"}, "topologyName": "lab"})]
    # A100: 2 × (32 cores, 256 GiB, 8 GPUs, 1 nic)
    assert inv.capacity["gpu-a100"] == {"cpu": 64_000, "memory": 512 * GIB, "nvidia.com/gpu": 16, "example.com/nic": 2}
    assert inv.topologies[0]["spec"]["levels"] == [{"nodeLabel": "example.com/rack"},
                                                   {"nodeLabel": "kubernetes.io/hostname"}]


def test_without_a_flavor_label_every_node_is_in_one_pool_flavor(tmp_path: Path) -> None:
    (tmp_path / "n.csv").write_text("name,gpus\nx,2\ny,4\n")
    (tmp_path / "m.yaml").write_text("name: Pool A\nnode: {column: name}\n"
                                     "allocatable: [{column: gpus, resource: nvidia.com/gpu, unit: count}]\n")
    inv = import_nodes(tmp_path / "n.csv", tmp_path / "m.yaml")
    assert [n["metadata"]["labels"] for n in inv.nodes] == [{"quotaledger.io/pool": "pool-a"}] * 2
    assert inv.flavors == [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                            "metadata": {"name": "pool-a"}, "spec": {"nodeLabels": {"quotaledger.io/pool": "pool-a"}}}]
    assert inv.capacity == {"pool-a": {"nvidia.com/gpu": 6}}


@pytest.mark.parametrize("body, problem", [
    ("name: x\nnode: {column: n}\nallocatable: []\n", "allocatable"),
    ("name: x\nnode: {column: n}\nallocatable: [{column: c, resource: cpu, unit: count}]\n", "cpu takes unit cores"),
    ("name: x\nnode: {column: n}\nallocatable: [{column: c, value: 1, resource: gpu, unit: count}]\n",
     "exactly one of column or value"),
    ("name: x\nnode: {column: n}\nallocatable: [{column: c, resource: g, unit: count}]\n"
     "topology: {name: t, levels: [kubernetes.io/hostname, rack]}\n", "may only be the last level"),
    ("name: x\nnode: {column: n}\nallocatable: [{column: c, resource: g, unit: count}]\nextra: 1\n", "extra"),
])
def test_invalid_node_mappings_name_the_field(tmp_path: Path, body: str, problem: str) -> None:
    (tmp_path / "m.yaml").write_text(body)
    with pytest.raises(MappingError, match=problem):
        load_node_mapping(tmp_path / "m.yaml")


def test_a_node_list_with_no_readable_row_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "n.csv").write_text("name,gpus\nx,\n")
    (tmp_path / "m.yaml").write_text("name: p\nnode: {column: name}\n"
                                     "allocatable: [{column: gpus, resource: nvidia.com/gpu, unit: count}]\n")
    with pytest.raises(TraceImportError, match="no readable node row: 1 row skipped: gpus"):
        import_nodes(tmp_path / "n.csv", tmp_path / "m.yaml")


def test_load_nodes_knows_the_named_inventories_and_needs_a_mapping_for_a_csv(tmp_path: Path) -> None:
    _lingjun()
    assert len(load_nodes("lingjun").nodes) == 847
    with pytest.raises(TraceImportError, match="not a known inventory"):
        load_nodes(str(tmp_path / "nodes.csv"))
    with pytest.raises(TraceImportError, match="no such node list"):
        load_nodes(str(tmp_path / "missing.csv"), MAPPINGS / "openb-nodes.yaml")


def test_enable_placement_sets_the_engine_config_field() -> None:
    afs = {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
           "spec": {"admissionFairSharing": {"usageHalfLifeTime": "1h"}}}
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}}
    on = enable_placement(QuotaConfig([afs, flavor], "r"))
    assert on.objects[0]["spec"] == {"admissionFairSharing": {"usageHalfLifeTime": "1h"}, "placement": {"enable": True}}
    assert on.objects[1] is flavor and afs["spec"] == {"admissionFairSharing": {"usageHalfLifeTime": "1h"}}
    fresh = enable_placement(QuotaConfig([flavor], "r"))
    assert fresh.objects[0] == {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig",
                                "metadata": {"name": "config"}, "spec": {"placement": {"enable": True}}}
    assert fresh.objects[1:] == [flavor]
