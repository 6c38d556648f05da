"""``quotaledger demo --nodes … --placement`` end to end on a hand-made trace and node list, and the
generated node/topology/gang events through the engine's decoder.

The lab (worked by hand): two nodes of 4 GPUs, ``lab-n1`` in rack r1 and ``lab-n2`` in rack r2;
one team (ClusterQueue ml); jobs (submit, run, GPUs, one pod each) j1 (0 s, 100 s, 4), j2 (10 s, 50 s, 2),
j3 (20 s, 50 s, 3), observed to start at submission.  The generated quota is capped at the nodes'
8 GPUs (docs/demo.md, the sizing rule); ``--quota-scale 2`` doubles it to 16, above the observed
peak of 9, so without placement nobody waits.  With placement (binpack, ties by name): j1 fills
lab-n1, j2 goes to lab-n2 (2 left), j3 needs 3: it waits until j2 ends at 60 s, then runs on
lab-n2 until 110 s.  ∫ allocated = 4 × 100 + 2 × 50 + 3 × 50 = 650 GPU·s of 8 × 200 over the
span (``--until 200``); while j3 waits, the 2 free GPUs fit no pending pod: all of them fragmented.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sim.gangs import GangRule, gang_trace
from replay.sim.importers.jobs import TraceImportError
from replay.sim.nodes import enable_placement, load_nodes
from replay.sim.quota_tree import generate_quota
from statemodel.events.decode import parse_event

JOBS = """job,submit,start,end,team,gpus
j1,0,0,100,ml,4
j2,10,10,60,ml,2
j3,20,20,70,ml,3
"""
JOB_MAPPING = """name: lab
epoch_base: "2026-01-01T00:00:00Z"
id: {column: job}
submit: {column: submit}
start: {column: start}
end: {column: end}
tenant: [{column: team}]
resources: [{column: gpus, resource: nvidia.com/gpu, unit: count}]
"""
NODES = "host,gpus,rack\nn1,4,r1\nn2,4,r2\n"
NODE_MAPPING = """name: lab
node: {column: host, prefix: lab-}
allocatable: [{column: gpus, resource: nvidia.com/gpu, unit: count}]
labels: [{label: example.com/rack, column: rack}]
topology: {name: lab, levels: [example.com/rack, kubernetes.io/hostname]}
"""


def test_demo_with_nodes_and_placement(tmp_path: Path) -> None:
    for name, text in (("jobs.csv", JOBS), ("jobs.yaml", JOB_MAPPING), ("nodes.csv", NODES),
                       ("nodes.yaml", NODE_MAPPING)):
        (tmp_path / name).write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--trace", str(tmp_path / "jobs.csv"),
                                      "--mapping", str(tmp_path / "jobs.yaml"), "--nodes", str(tmp_path / "nodes.csv"),
                                      "--node-mapping", str(tmp_path / "nodes.yaml"), "--placement", "--until", "200",
                                      "--quota-scale", "2"])
    assert result.exit_code == 0, (result.output, result.exception)
    placement = json.loads((out / "report.json").read_text())["placement"]
    (waits,) = placement["waits"]
    assert (waits["clusterQueue"], waits["jobs"], waits["observedMs"]) == ("ml", 3, [0, 0, 0])
    assert (waits["withPlacementMs"], waits["withoutPlacementMs"]) == ([0, 0, 40_000], [0, 0, 0])
    (util,) = placement["utilization"]
    assert (util["group"], util["nodes"], util["resource"]) == ("lab", 2, "nvidia.com/gpu")
    assert (util["allocatedMs"], util["allocatableMs"]) == (650 * 1000, 8 * 200 * 1000)
    waiting = [p for p in placement["fragmentation"] if p[3]]  # [time, free, fragmented, pending]
    assert waiting and all((free, frag, pending) == (2, 2, 1) for _, free, frag, pending in waiting)
    assert all(20_000 <= t - 1_767_225_600_000 <= 60_000 for t, *_ in waiting)
    assert (out / "fragmentation.png").stat().st_size > 0
    assert (out / "events-without-placement.ndjson").exists()
    page = (out / "index.html").read_text()
    assert "<h2>Placement</h2>" in page and "fragmentation.png" in page
    events = [json.loads(line) for line in (out / "events.ndjson").read_text().splitlines()]
    kinds = [e["object"]["kind"] for e in events if e["type"] == "Applied"][:6]
    assert kinds[:3] == ["EngineConfig", "Topology", "ResourceFlavor"]
    assert events[0]["object"]["spec"]["placement"] == {"enable": True}


def test_the_generated_inventory_and_gang_events_decode_with_no_rejection() -> None:
    try:
        lingjun = load_nodes("lingjun")
    except TraceImportError:
        pytest.skip("the node inventories are not shipped: needs shared/data/traces or $QUOTALEDGER_TRACES")
    trace = gang_trace(lingjun, GangRule(jobs=40))
    config = enable_placement(generate_quota(trace))
    from replay.sim.manifests import queue_names
    from replay.sim.simulator import workload_object

    objects = config.objects + trace.nodes + [
        workload_object(job, *queue_names(trace.name, job.tenant)[2]) for job in trace.jobs]
    assert {o["kind"] for o in objects} >= {"Topology", "ResourceFlavor", "Node", "Workload", "EngineConfig"}
    assert any("kai.scheduler/topology" in (w["metadata"].get("annotations") or {}) for w in objects)
    assert any("topologyRequest" in w["spec"].get("podSets", [{}])[0] for w in objects if w["kind"] == "Workload")
    for i, obj in enumerate(objects):
        parse_event({"id": f"e{i}", "time": 0, "type": "Applied", "object": obj})  # raises on a rejection
    openb = load_nodes("openb")
    for i, obj in enumerate(openb.flavors + openb.nodes):
        parse_event({"id": f"o{i}", "time": 0, "type": "Applied", "object": obj})
