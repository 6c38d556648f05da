"""Trace import through a mapping (replay/sim/importers/mapping.py, outliers.py) and the `simulate`
command's handling of it: pods per job from a column, per-job amounts, skipped rows that keep the
timeline, all-rows-failed reasons, outlier warnings, `--mapping` without `--trace`.

Every expected value is worked out by hand from the small CSV files written here (docs/traces.md).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sim.importers.jobs import ImportResult, Job, TraceImportError
from replay.sim.importers.mapping import import_csv
from replay.sim.importers.outliers import outlier_warnings

T0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z
GIB = 1 << 30

MAPPING = """
version: 1
name: lab
epoch_base: "2024-01-01T00:00:00Z"
time: {format: offset, unit: s}
id: {column: job}
submit: {column: submit}
duration: {column: run, unit: min}
tenant: [{column: team}]
count: {column: node_num}
resources:
  - {column: gpus, resource: nvidia.com/gpu, unit: count, per: job}
  - {column: mem_gb, resource: memory, unit: GiB}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pods_per_job_from_a_column_and_per_job_amounts(tmp_path: Path) -> None:
    csv = _write(tmp_path, "t.csv", "job,submit,run,team,node_num,gpus,mem_gb\n"
                                    "a,0,10,ml,4,32,16\n"   # 32 GPUs over 4 pods: 8 per pod; 16 GiB per pod
                                    "b,60,1.5,ml,3,10,1\n")  # 10 over 3 pods: 3.33… rounds up to 4 per pod
    result = import_csv(csv, _write(tmp_path, "m.yaml", MAPPING))
    assert result.jobs == [
        Job("a", T0, 600_000, ("ml",), 4, (("memory", 16 * GIB), ("nvidia.com/gpu", 8)), line=2),
        Job("b", T0 + 60_000, 90_000, ("ml",), 3, (("memory", GIB), ("nvidia.com/gpu", 4)), line=3)]


def test_when_every_row_fails_the_error_gives_the_reasons(tmp_path: Path) -> None:
    csv = _write(tmp_path, "t.csv", "job,submit,run,team,node_num,gpus,mem_gb\n"
                                    "a,0,10,ml,0,8,1\n"
                                    "b,x,10,ml,1,8,1\n"
                                    "c,5,10,ml,two,8,1\n")
    with pytest.raises(TraceImportError) as err:
        import_csv(csv, _write(tmp_path, "m.yaml", MAPPING))
    # two rows fail at node_num (line 2 first), one at submit
    assert str(err.value) == (
        f"{csv}: no readable row: 3 rows skipped: node_num: 2 rows (first line 2: node_num: must be a whole number "
        "≥ 1, got '0'); submit: 1 row (first line 3: submit: not a number: 'x')")


def _job(name: str, gpus: int, count: int = 1) -> Job:
    return Job(name, T0, 1000, ("t",), count, (("nvidia.com/gpu", gpus),))


def test_outliers_above_the_largest_node_and_far_above_the_median() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}}}
    jobs = [_job("a", 1), _job("b", 2), _job("c", 1), _job("big", 16), _job("corrupt", 100_000)]
    warnings = outlier_warnings(ImportResult("lab", jobs, [], T0, T0 + 1000, nodes=[node]))
    # the largest node has 8 GPUs: big (16) and corrupt exceed it; the median job total is 2 (ranks
    # 1, 1, 2, 16, 100000 -> the 3rd): only corrupt is above 100 x 2 = 200
    assert warnings == [
        "warning: job big asks 16 nvidia.com/gpu per pod, more than the largest node has (8)",
        "warning: job corrupt asks 100000 nvidia.com/gpu per pod, more than the largest node has (8)",
        "warning: job corrupt asks 100000 nvidia.com/gpu in total, over 100x the trace's median job (2); "
        "a corrupt row? the generated quota is sized by it"]
    assert outlier_warnings(ImportResult("lab", jobs[:3], [], T0, T0 + 1000)) == []


def test_cli_mapping_without_trace_is_an_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["simulate", "--out", str(tmp_path / "e.ndjson"),
                                      "--mapping", str(_write(tmp_path, "m.yaml", MAPPING))])
    assert result.exit_code == 2
    assert "--mapping needs --trace" in result.output
    assert not (tmp_path / "e.ndjson").exists()


def _quota(tmp_path: Path, gpus: int) -> str:
    """A quota folder: ClusterQueue ``ml`` (the tenant ``ml``'s own) with ``gpus`` GPUs and 100 GiB."""
    folder = tmp_path / "quota"
    folder.mkdir()
    (folder / "q.yaml").write_text(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: f}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: ml}}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, memory]
    flavors:
    - name: f
      resources:
      - {{name: nvidia.com/gpu, nominalQuota: {gpus}}}
      - {{name: memory, nominalQuota: 100Gi}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: ml, namespace: ml}}
spec: {{clusterQueue: ml}}
""")
    return str(folder)


def test_cli_simulate_warns_of_outliers_and_runs_until_the_waiting_jobs_finish(tmp_path: Path) -> None:
    # 2 GPUs; four 1-GPU jobs of 1 min submitted at 0, then a corrupt 100,000-GPU row.  The trace
    # itself ends at 0 (its last submission).
    rows = "".join(f"j{i},0,1,ml,1,1,1\n" for i in range(4)) + "bad,0,1,ml,1,100000,1\n"
    csv = _write(tmp_path, "t.csv", "job,submit,run,team,node_num,gpus,mem_gb\n" + rows)
    out = tmp_path / "e.ndjson"
    result = CliRunner().invoke(app, ["simulate", "--out", str(out), "--trace", str(csv), "--tick", "0",
                                      "--quota", _quota(tmp_path, 2),
                                      "--mapping", str(_write(tmp_path, "m.yaml", MAPPING))])
    assert result.exit_code == 0, result.output
    # the median job total of GPUs is 1 (1, 1, 1, 1, 100000): bad is over 100 x 1
    assert ("warning: job bad (line 6) asks 100000 nvidia.com/gpu in total, over 100x the trace's median job (1)"
            in result.stderr)
    events = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    # j0, j1 run 0..1 min; j2, j3 wait for them and run 1..2 min — past the trace end; bad never fits
    assert [(e["id"], e["time"] - T0) for e in events if e["type"] == "WorkloadFinished"] == [
        ("finish/ml/j0", 60_000), ("finish/ml/j1", 60_000), ("finish/ml/j2", 120_000), ("finish/ml/j3", 120_000)]
    assert "at the end 0 running, 1 pending;" in result.stdout


def test_cli_until_reports_the_jobs_cut(tmp_path: Path) -> None:
    csv = _write(tmp_path, "t.csv", "job,submit,run,team,node_num,gpus,mem_gb\na,0,10,ml,1,1,1\nb,60,10,ml,1,1,1\n")
    out = tmp_path / "e.ndjson"
    result = CliRunner().invoke(app, ["simulate", "--out", str(out), "--trace", str(csv), "--tick", "0",
                                      "--quota", _quota(tmp_path, 2),
                                      "--mapping", str(_write(tmp_path, "m.yaml", MAPPING)), "--until", "5m"])
    assert result.exit_code == 0, result.output
    # a runs 0..10 min, b 1..11 min (2 GPUs fit both); --until 5 min cuts both
    assert "at the end 2 running, 0 pending (2 cut by the horizon before their run time ended)" in result.stdout


def test_the_complete_example_of_docs_traces_md(tmp_path: Path) -> None:
    from tests.paths import ROOT

    text = (ROOT / "docs" / "traces.md").read_text(encoding="utf-8")
    section = text.split("## A complete example", 1)[1].split("\n## ", 1)[0]
    csv_text = section.split("```csv\n", 1)[1].split("```", 1)[0]
    yaml_text = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    result = import_csv(_write(tmp_path, "jobs.csv", csv_text), _write(tmp_path, "jobs.yaml", yaml_text))
    minute = 60_000
    # the page's claims: deltas 0, 5, 1.5 min; 16 GPUs over 2 pods, 2 over 1, 30 over 4 rounded up to 8
    assert result.bad_rows == []
    assert result.jobs == [
        Job("j1", T0, 30 * minute, ("ml", "alice"), 2, (("memory", 64 * GIB), ("nvidia.com/gpu", 8)), "pool-a", line=2),
        Job("j2", T0 + 5 * minute, 10 * minute, ("ml", "bob"), 1, (("memory", 16 * GIB), ("nvidia.com/gpu", 2)),
            "pool-b", line=3),
        Job("j3", T0 + 6 * minute + 30_000, None, ("cv", "carol"), 4, (("memory", 32 * GIB), ("nvidia.com/gpu", 8)),
            "pool-a", line=4)]
