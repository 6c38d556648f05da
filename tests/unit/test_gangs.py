"""The generated gang mix (``replay.sim.gangs``) and how the simulator writes a job's topology request.

The CRC-32 buckets in the comments were computed with ``zlib.crc32`` (asserted in
``test_buckets_are_crc32``); the rest follows from the rule's tables by hand.
"""

from __future__ import annotations

import zlib

import pytest

from replay.sim.gangs import EPOCH_BASE_MS, GangRule, gang_jobs, gang_trace
from replay.sim.importers.inventory import NodeInventory, node_object, topology_object
from replay.sim.importers.jobs import Job, TopologyRequest
from replay.sim.simulator import workload_object

RACK, SPINE = "example.com/rack", "example.com/spine"
INVENTORY = NodeInventory("lab", [node_object("n1", {RACK: "r1", SPINE: "s1"}, {"nvidia.com/gpu": 8})],
                          topologies=[topology_object("lab", [SPINE, RACK, "kubernetes.io/hostname"])])


def test_buckets_are_crc32() -> None:
    assert [zlib.crc32(f"gang-0000{i}".encode()) % 16 for i in (0, 1, 3, 6, 9)] == [10, 12, 0, 15, 14]
    assert [zlib.crc32(f"gang-0000{i}/run".encode()) % 4 for i in (0, 1, 3, 6, 9)] == [0, 0, 0, 0, 1]
    assert [zlib.crc32(f"gang-0000{i}/team".encode()) % 4 for i in (0, 1, 3, 6, 9)] == [2, 3, 0, 3, 2]


def test_the_rule_gives_these_jobs() -> None:
    jobs = gang_jobs(INVENTORY, GangRule(jobs=10, gap_s=95))
    by = {j.id: j for j in jobs}
    H = 3_600_000
    gpu = (("nvidia.com/gpu", 8),)
    # gang-00000: size bucket 10 -> 4 pods (rack), run bucket 0 -> 1 h, team 2; even: Kueue's shape
    assert by["gang-00000"] == Job("gang-00000", EPOCH_BASE_MS, H, ("team-2",), 4, gpu, line=1,
                                   topology=TopologyRequest("required", RACK, "lab", "kueue"))
    # gang-00001: bucket 12 -> 8 pods (still a rack), team 3; odd: KAI's annotations; submitted 95 s later
    assert by["gang-00001"].count == 8 and by["gang-00001"].submit_ms == EPOCH_BASE_MS + 95_000
    assert by["gang-00001"].topology == TopologyRequest("required", RACK, "lab", "kai")
    # gang-00003: bucket 0 -> 1 pod, no constraint
    assert by["gang-00003"].count == 1 and by["gang-00003"].topology is None
    # gang-00006: bucket 15 -> 32 pods, a spine; gang-00009: bucket 14 -> 16 pods, run bucket 1 -> 2 h
    assert (by["gang-00006"].count, by["gang-00006"].topology.level) == (32, SPINE)  # type: ignore[union-attr]
    assert (by["gang-00009"].count, by["gang-00009"].run_ms, by["gang-00009"].topology.style) == (
        16, 2 * H, "kai")  # type: ignore[union-attr]
    assert all(j.observed_start_ms is None for j in jobs)


def test_the_trace_carries_the_inventory() -> None:
    trace = gang_trace(INVENTORY, GangRule(jobs=3, gap_s=60))
    assert trace.name == "gangs" and trace.nodes == INVENTORY.nodes and trace.topologies == INVENTORY.topologies
    assert (trace.trace_start_ms, trace.trace_end_ms) == (EPOCH_BASE_MS, EPOCH_BASE_MS + 120_000)


def test_gangs_need_a_rack_and_a_spine_level() -> None:
    flat = NodeInventory("flat", topologies=[topology_object("flat", [RACK, "kubernetes.io/hostname"])])
    with pytest.raises(ValueError, match="rack and a spine"):
        gang_jobs(flat)
    with pytest.raises(ValueError, match="has no topology"):
        gang_jobs(NodeInventory("none"))


def test_a_topology_request_is_written_the_kueue_or_the_kai_way() -> None:
    base = Job("g", 0, 60_000, ("t",), 2, (("nvidia.com/gpu", 8),))
    kueue = workload_object(Job(**{**_fields(base), "topology": TopologyRequest("required", RACK, "lab")}), "t", "t")
    assert kueue["spec"]["podSets"] == [{"name": "main", "count": 2, "requests": {"nvidia.com/gpu": "8"},
                                         "topologyRequest": {"required": RACK}}]
    assert kueue["metadata"]["annotations"] == {"quotaledger.io/run-time": "1m0s"}
    kai = workload_object(Job(**{**_fields(base), "topology": TopologyRequest("preferred", SPINE, "lab", "kai")}),
                          "t", "t")
    assert "topologyRequest" not in kai["spec"]["podSets"][0]
    assert kai["metadata"]["annotations"] == {"quotaledger.io/run-time": "1m0s", "kai.scheduler/topology": "lab",
                                              "kai.scheduler/topology-preferred-placement": SPINE}
    # no constraint, no run time: neither field nor annotation
    plain = workload_object(Job("g", 0, None, ("t",), 1, (("cpu", 1000),)), "t", "t")
    assert "annotations" not in plain["metadata"] and "topologyRequest" not in plain["spec"]["podSets"][0]


def _fields(job: Job) -> dict:
    return {name: getattr(job, name) for name in Job.__slots__}  # type: ignore[attr-defined]
