"""Trace importers and the generic CSV mapping, on excerpts of the real files (tests/data/README.md).

Expected jobs are worked out by hand from the CSV lines; the arithmetic is in the comments.
Constants: GiB = 2**30 = 1,073,741,824 bytes; MiB = 2**20 = 1,048,576 bytes; DLRM second 0 =
2025-01-01T00:00:00Z = 1,735,689,600,000 ms; openb second 0 = 2023-01-01T00:00:00Z =
1,672,531,200,000 ms.  App groups / users are CRC-32 buckets (values printed by zlib, checked in
``test_synthesized_buckets_are_crc32``).
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from replay.sim.importers.dlrm import import_dlrm
from replay.sim.importers.jobs import BadRow, Job, TraceImportError
from replay.sim.importers.mapping import MappingError, import_csv, load_mapping
from replay.sim.importers.openb import import_openb
from tests.paths import DATA, MAPPINGS

B = 1_735_689_600_000  # DLRM trace second 0
O = 1_672_531_200_000  # openb trace second 0
GIB = 1 << 30
MIB = 1 << 20


def dlrm_expected() -> list[Job]:
    R = "alibaba.com/rdma"
    return [
        # line 2: instance_0,HN,app_0,12,..,gpu 1,rdma 25,mem 120.0,disk 640.0,..,,,  -> preexisting, never deleted
        Job("instance_0", B, None, ("hn", "g11", "app_0"), 1,
            ((R, 25), ("cpu", 12_000), ("ephemeral-storage", 640 * GIB), ("memory", 120 * GIB), ("nvidia.com/gpu", 1)),
            "hn", B, True, None, 2),
        # line 3: same shape, disk 680.0
        Job("instance_1", B, None, ("hn", "g11", "app_0"), 1,
            ((R, 25), ("cpu", 12_000), ("ephemeral-storage", 680 * GIB), ("memory", 120 * GIB), ("nvidia.com/gpu", 1)),
            "hn", B, True, None, 3),
        # line 4: instance_2454,CN,app_87,64,..,rdma 100,mem 320,disk 255,,,,85.0 -> preexisting, deleted at 85 s: run 85,000 ms
        Job("instance_2454", B, 85_000, ("cn", "g06", "app_87"), 1,
            ((R, 100), ("cpu", 64_000), ("ephemeral-storage", 255 * GIB), ("memory", 320 * GIB)), "cn", B, True, None, 4),
        # line 5: memory 937.5 GiB = 937.5 * 1,073,741,824 = 1,006,632,960,000 bytes (exact); deleted at 17,623 s
        Job("instance_2492", B, 17_623_000, ("cn", "g05", "app_42"), 1,
            ((R, 51), ("cpu", 192_000), ("ephemeral-storage", 510 * GIB), ("memory", 1_006_632_960_000)),
            "cn", B, True, None, 5),
        # line 6: created 475.00000000000006 s -> 475,000 ms; scheduled 623 s (wait 148,000 ms); never deleted
        Job("instance_7280", B + 475_000, None, ("cn", "g03", "app_22"), 1,
            ((R, 1), ("cpu", 64_000), ("ephemeral-storage", 544 * GIB), ("memory", 320 * GIB)),
            "cn", B + 623_000, False, None, 6),
        # line 7: created 610, scheduled 683 (wait 73 s), deleted 91,730: run = 91,730 - 683 = 91,047 s
        Job("instance_7281", B + 610_000, 91_047_000, ("cn", "g07", "app_88"), 1,
            ((R, 1), ("cpu", 64_000), ("ephemeral-storage", 255 * GIB), ("memory", 320 * GIB)),
            "cn", B + 683_000, False, None, 7),
        # line 8: created = scheduled = 475 s (wait 0), deleted 2,843: run = 2,843 - 475 = 2,368 s
        Job("instance_7284", B + 475_000, 2_368_000, ("cn", "g12", "app_46"), 1,
            ((R, 1), ("cpu", 96_000), ("ephemeral-storage", 255 * GIB), ("memory", 480 * GIB)),
            "cn", B + 475_000, False, None, 8),
        # line 9: HN, created 55,612, scheduled 55,657 (wait 45 s), never deleted
        Job("instance_7503", B + 55_612_000, None, ("hn", "g13", "app_28"), 1,
            ((R, 25), ("cpu", 8_000), ("ephemeral-storage", 170 * GIB), ("memory", 40 * GIB), ("nvidia.com/gpu", 1)),
            "hn", B + 55_657_000, False, None, 9),
    ]


def openb_expected() -> list[Job]:
    G, M = "nvidia.com/gpu", "alibaba.com/gpu-milli"
    return [
        # line 2: 12000m cpu, 16384 MiB, 1 whole GPU (gpu_milli 1000); created = scheduled = 0; deleted 12,537,496 s
        Job("openb-pod-0000", O, 12_537_496_000, ("online", "ls", "u0"), 1,
            ((M, 1000), ("cpu", 12_000), ("memory", 16_384 * MIB), (G, 1)), None, O, False, None, 2),
        # line 3: GPU-sharing pod: gpu_milli 460 -> 460 gpu-milli and no whole GPU; run 12,902,960 - 427,061 = 12,475,899 s
        Job("openb-pod-0001", O + 427_061_000, 12_475_899_000, ("online", "ls", "u6"), 1,
            ((M, 460), ("cpu", 6_000), ("memory", 12_288 * MIB)), None, O + 427_061_000, False, None, 3),
        # line 4: CPU-only; scheduled 2 s after creation; run 12,902,960 - 2,759,676 = 10,143,284 s
        Job("openb-pod-0005", O + 2_759_674_000, 10_143_284_000, ("online", "ls", "u7"), 1,
            (("cpu", 20_000), ("memory", 65_536 * MIB)), None, O + 2_759_676_000, False, None, 4),
        # line 5: whole GPU, wait 1 s; run 11,815,163 - 3,019,331 = 8,795,832 s
        Job("openb-pod-0006", O + 3_019_330_000, 8_795_832_000, ("online", "ls", "u5"), 1,
            ((M, 1000), ("cpu", 4_000), ("memory", 16_384 * MIB), (G, 1)), None, O + 3_019_331_000, False, None, 5),
        # line 6: Burstable, 8 GPUs -> 8 whole + 8 * 1000 gpu-milli; run 10,769,854 - 9,437,497 = 1,332,357 s
        Job("openb-pod-0017", O + 9_437_497_000, 1_332_357_000, ("batch", "burstable", "u2"), 1,
            ((M, 8000), ("cpu", 88_000), ("memory", 327_680 * MIB), (G, 8)), None, O + 9_437_497_000, False, None, 6),
        # line 7: BE sharing pod 220 milli; 15258 MiB = 15,999,172,608 B; run 9,973,826 - 9,679,175 = 294,651 s
        Job("openb-pod-0022", O + 9_679_175_000, 294_651_000, ("batch", "be", "u6"), 1,
            ((M, 220), ("cpu", 4_000), ("memory", 15_999_172_608)), None, O + 9_679_175_000, False, None, 7),
        # line 8: Pending, never scheduled: no start, no run time, withdrawn at its deletion 10,001,403 s
        Job("openb-pod-0061", O + 10_001_278_000, None, ("batch", "be", "u0"), 1,
            ((M, 1000), ("cpu", 11_908), ("memory", 47_104 * MIB), (G, 1)), None, None, False, O + 10_001_403_000, 8),
        # line 9: Guaranteed shares the burstable queue; run 10,036,353 - 10,035,396 = 957 s
        Job("openb-pod-0129", O + 10_035_396_000, 957_000, ("batch", "burstable", "u1"), 1,
            ((M, 1000), ("cpu", 12_000), ("memory", 24_576 * MIB), (G, 1)), None, O + 10_035_396_000, False, None, 9),
    ]


def test_synthesized_buckets_are_crc32() -> None:
    assert [zlib.crc32(a.encode()) % 16 for a in ("app_0", "app_87", "app_42", "app_22", "app_88", "app_46", "app_28")] \
        == [11, 6, 5, 3, 7, 12, 13]
    assert [zlib.crc32(f"openb-pod-{n:04d}".encode()) % 8 for n in (0, 1, 5, 6, 17, 22, 61, 129)] == [0, 6, 7, 5, 2, 6, 0, 1]


def test_dlrm_excerpt_gives_the_hand_checked_jobs() -> None:
    result = import_dlrm(DATA / "dlrm_excerpt.csv")
    assert result.bad_rows == []
    assert result.jobs == dlrm_expected()
    assert [j.line for j in result.jobs] == list(range(2, 10))
    assert [j.observed_wait_ms for j in result.jobs] == [None, None, None, None, 148_000, 73_000, 0, 45_000]
    # span: second 0 .. the last time mentioned = instance_7281's deletion at 91,730 s
    assert (result.trace_start_ms, result.trace_end_ms) == (B, B + 91_730_000)
    assert [f["metadata"]["name"] for f in result.flavors] == ["cn", "hn"]
    assert result.nodes == []


def test_openb_excerpt_gives_the_hand_checked_jobs_and_nodes() -> None:
    result = import_openb(DATA / "openb_pods_excerpt.csv", DATA / "openb_nodes_excerpt.csv")
    assert result.bad_rows == []
    assert result.jobs == openb_expected()
    assert [j.observed_wait_ms for j in result.jobs] == [0, 0, 2_000, 1_000, 0, 0, None, 0]
    # last time mentioned: pods 0001 and 0005 end at 12,902,960 s
    assert result.trace_end_ms == O + 12_902_960_000
    assert [n["metadata"]["name"] for n in result.nodes] == ["openb-node-0000", "openb-node-0229", "openb-node-0234",
                                                            "openb-node-0243"]
    # openb-node-0229,96000,786432,8,V100M32: 786,432 MiB = 768 GiB; 8 GPUs = 8,000 gpu-milli
    assert result.nodes[1] == {"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": "openb-node-0229", "labels": {"quotaledger.io/gpu-model": "V100M32"}},
                               "status": {"allocatable": {"cpu": "96", "memory": "768Gi", "nvidia.com/gpu": "8",
                                                          "alibaba.com/gpu-milli": "8000"}}}
    assert [f["metadata"]["name"] for f in result.flavors] == ["cpu-only", "gpu-g2", "gpu-t4", "gpu-v100m32"]
    assert result.flavors[0]["spec"] == {"nodeLabels": {"quotaledger.io/gpu-model": "none"}}
    # openb-node-0000,32000,262144,0, -> cpu-only: 32 cores, 256 GiB, no GPU
    assert result.capacity["cpu-only"] == {"cpu": 32_000, "memory": 256 * GIB, "nvidia.com/gpu": 0,
                                           "alibaba.com/gpu-milli": 0}
    assert result.capacity["gpu-t4"]["nvidia.com/gpu"] == 4


@pytest.mark.parametrize("excerpt, mapping, importer", [
    ("dlrm_excerpt.csv", "dlrm.yaml", lambda p: import_dlrm(p)),
    ("openb_pods_excerpt.csv", "openb.yaml", lambda p: import_openb(p, DATA / "openb_nodes_excerpt.csv")),
])
def test_shipped_mapping_matches_the_dedicated_importer_on_the_excerpt(excerpt, mapping, importer) -> None:
    dedicated = importer(DATA / excerpt)
    generic = import_csv(DATA / excerpt, MAPPINGS / mapping)
    assert generic.bad_rows == []
    assert generic.jobs == dedicated.jobs
    assert [j.line for j in generic.jobs] == [j.line for j in dedicated.jobs]
    assert (generic.name, generic.trace_start_ms, generic.trace_end_ms) == \
           (dedicated.name, dedicated.trace_start_ms, dedicated.trace_end_ms)


def test_shipped_dlrm_mapping_matches_the_dedicated_importer_on_the_full_trace() -> None:
    """The DLRM trace is always there (shipped with the package when the shared folder is absent)."""
    from replay.sim.importers.dlrm import FILE
    from replay.sim.traces import trace_dir

    dlrm = trace_dir("dlrm")
    csv = dlrm / FILE if (dlrm / FILE).exists() else dlrm / f"{FILE}.gz"
    assert import_csv(csv, MAPPINGS / "dlrm.yaml").jobs == import_dlrm(dlrm).jobs


def test_shipped_openb_mapping_matches_the_dedicated_importer_on_the_full_trace() -> None:
    from replay.sim.traces import trace_dir

    try:
        openb = trace_dir("openb")
    except TraceImportError:
        pytest.skip("the openb trace is not shipped (its terms): needs shared/data/traces or $QUOTALEDGER_TRACES")
    assert import_csv(openb / "openb_pod_list_default.csv", MAPPINGS / "openb.yaml").jobs == import_openb(openb).jobs


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GENERIC_MAPPING = """
version: 1
name: Lab Cluster
time: {format: iso}
id: {column: job}
submit: {column: submitted}
duration: {column: runtime_s, unit: s}
tenant:
  - {column: team, map: {ml: ml, infra: infra}}
  - {column: user}
count: {column: pods}
resources:
  - {column: cpus, resource: cpu, unit: cores}
  - {column: mem_gb, resource: memory, unit: GB}
  - {column: gpus, resource: nvidia.com/gpu, unit: count}
"""


def test_generic_mapping_reports_bad_rows_with_line_numbers(tmp_path: Path) -> None:
    mapping = _write(tmp_path, "m.yaml", GENERIC_MAPPING)
    csv = _write(tmp_path, "t.csv", "\n".join([
        "job,submitted,runtime_s,team,user,pods,cpus,mem_gb,gpus",
        "a,2024-05-01T10:00:00Z,60,ml,ann,2,1.5,4,0",          # 2 good
        "b,yesterday,60,ml,ann,1,1,1,0",                       # 3 bad time
        "c,2024-05-01T10:00:05Z,60,ml,bob,1,,1,0",             # 4 empty cpus
        "d,2024-05-01T10:00:06Z,-5,ml,bob,1,1,1,0",            # 5 negative duration
        "a,2024-05-01T10:00:07Z,60,ml,bob,1,1,1,0",            # 6 duplicate id
        "e,2024-05-01T10:00:08Z,60,sales,cy,1,1,1,0",          # 7 team not in the map
        "f,2024-05-01T10:00:09Z,,infra,cy,0,1,1,1",            # 8 count 0
        "g,2024-05-01T10:00:10+02:00,,infra,cy,1,0.0005,1,1",  # 9 good: running at the end; 0.5m cpu rounds up to 1m
    ]) + "\n")
    result = import_csv(csv, mapping)
    assert [b.line for b in result.bad_rows] == [3, 4, 5, 6, 7, 8]
    assert [str(b) for b in result.bad_rows] == [
        "line 3: submitted: not an ISO 8601 time: 'yesterday'",
        "line 4: cpus: empty",
        "line 5: runtime_s: must not be negative, got '-5'",
        "line 6: job: duplicate id 'a' (first on line 2)",
        "line 7: team: value 'sales' is not in the map",
        "line 8: pods: must be a whole number ≥ 1, got '0'",
    ]
    t0 = 1_714_557_600_000  # 2024-05-01T10:00:00Z
    assert result.jobs == [
        # 1.5 cores = 1500m; 4 GB = 4,000,000,000 B (decimal unit)
        Job("a", t0, 60_000, ("ml", "ann"), 2, (("cpu", 1_500), ("memory", 4_000_000_000)), line=2),
        # 10:00:10+02:00 = 08:00:10Z = t0 - 2 h + 10 s
        Job("g", t0 - 7_200_000 + 10_000, None, ("infra", "cy"), 1,
            (("cpu", 1), ("memory", 1_000_000_000), ("nvidia.com/gpu", 1)), line=9),
    ]
    assert result.name == "lab-cluster"
    assert result.trace_start_ms == t0 - 7_190_000  # no epoch_base: the earliest submit


def test_generic_mapping_accumulates_inter_arrival_deltas_and_reads_epoch_ends(tmp_path: Path) -> None:
    mapping = _write(tmp_path, "m.yaml", """
name: deltas
epoch_base: "2024-01-01T00:00:00Z"
id: {column: id}
submit: {column: gap, format: delta, unit: min}
end: {column: end, format: epoch, unit: ms}
tenant: [{column: q}]
resources: [{column: cpu, resource: cpu, unit: millicores}]
""")
    t0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z
    csv = _write(tmp_path, "t.csv", f"id,gap,end,q,cpu\nx,1,{t0 + 120_000},q1,500\ny,2,0,q1,-5\nz,0.5,,q1,250\n")
    result = import_csv(csv, mapping)
    assert [str(b) for b in result.bad_rows] == ["line 3: cpu: must not be negative, got -5"]
    # x: t0 + 1 min, ends at t0 + 2 min -> run 60 s.  y is skipped, but its 2 min still count:
    # z is 0.5 min after y's submission, t0 + 1 + 2 + 0.5 min
    assert result.jobs == [Job("x", t0 + 60_000, 60_000, ("q1",), 1, (("cpu", 500),), line=2),
                           Job("z", t0 + 210_000, None, ("q1",), 1, (("cpu", 250),), line=4)]
    # an unreadable delta would shift every later submission: the import stops and says where
    bad = _write(tmp_path, "bad.csv", f"id,gap,end,q,cpu\nx,1,{t0 + 120_000},q1,500\ny,x,0,q1,500\nz,0.5,,q1,250\n")
    with pytest.raises(TraceImportError, match=r"line 3: gap: not a number: 'x': submit times are deltas"):
        import_csv(bad, mapping)


@pytest.mark.parametrize("body, problem", [
    ("name: x\nid: {column: a}\nsubmit: {column: s}\ntenant: [{column: t}]\nresources: []\n", "resources"),
    ("name: x\nid: {column: a}\nsubmit: {column: s}\ntenant: [{column: t}]\n"
     "resources: [{column: c, resource: cpu, unit: GiB}]\n", "cpu takes unit cores or millicores"),
    ("name: x\nepoch_base: '2024-01-01T00:00:00Z'\nid: {column: a}\nsubmit: {column: s}\nend: {column: e}\n"
     "duration: {column: d}\ntenant: [{column: t}]\nresources: [{column: c, resource: cpu, unit: cores}]\n",
     "give end or duration, not both"),
    ("name: x\nid: {column: a}\nsubmit: {column: s}\ntenant: [{column: t}]\n"
     "resources: [{column: c, resource: cpu, unit: cores}]\n", "epoch_base is required"),
    ("name: x\nid: {column: a, value: b}\n", "exactly one of column or value"),
    ("name: x\nbogus: 1\n", "bogus"),
])
def test_invalid_mapping_files_are_rejected_with_the_field(tmp_path: Path, body: str, problem: str) -> None:
    with pytest.raises(MappingError, match=problem):
        load_mapping(_write(tmp_path, "m.yaml", body))


def test_a_mapped_column_missing_from_the_header_is_fatal(tmp_path: Path) -> None:
    csv = _write(tmp_path, "t.csv", "instance_sn,role\ni,CN\n")
    with pytest.raises(TraceImportError, match="header has no column app_name"):
        import_csv(csv, MAPPINGS / "dlrm.yaml")


def test_dlrm_importer_reports_bad_rows(tmp_path: Path) -> None:
    lines = (DATA / "dlrm_excerpt.csv").read_text().splitlines()
    lines.append("instance_x,CN,app_1,64,64,0,0,1,1,abc,320.0,255.0,300.0,-1,10.0,10.0,20.0")
    lines.append("instance_y,CN,app_1,64,64,0,0,1,1,320.0,320.0,255.0,300.0,-1,10.0,5.0,20.0")
    lines.append(lines[1])
    result = import_dlrm(_write(tmp_path, "d.csv", "\n".join(lines) + "\n"))
    assert result.bad_rows == [BadRow(10, "memory_request: not a number: 'abc'"),
                               BadRow(11, "scheduled_time: earlier than creation_time"),
                               BadRow(12, "instance_sn: duplicate id 'instance_0' (first on line 2)")]
    assert len(result.jobs) == 8
