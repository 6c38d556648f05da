"""The public CLI contract, exercised through Typer's CliRunner.

``quotaledger replay EVENTS --decisions-out D --state-out S`` and
``quotaledger state EVENTS --json`` on the shipped example: output shapes, gap-free
``seq``, determinism (byte-identical reruns), rejected lines (exit 0, counted,
named on stderr), gzip input and ``-`` for stdin / stdout.
"""

from __future__ import annotations

import gzip
from importlib.resources import files
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.ndjson import iter_lines

EXAMPLE = Path(str(files("replay").joinpath("examples/two-teams.ndjson")))


def _runner() -> CliRunner:
    """A runner with stdout and stderr kept apart (older Click needs ``mix_stderr=False``)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def _replay(tmp_path: Path, events: Path | str, tag: str = "run", stdin: bytes | None = None):
    """Run ``replay`` into ``tmp_path``; returns ``(result, decisions_bytes, state_bytes)``."""
    d = tmp_path / f"{tag}.decisions.ndjson"
    s = tmp_path / f"{tag}.state.json"
    result = _runner().invoke(
        app, ["replay", str(events), "--decisions-out", str(d), "--state-out", str(s)], input=stdin
    )
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result, d.read_bytes(), s.read_bytes()


def _decisions(raw: bytes) -> list[dict]:
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


# --------------------------------------------------------------------------- replay


def test_replay_example_writes_decisions_and_state(tmp_path: Path) -> None:
    result, raw_decisions, raw_state = _replay(tmp_path, EXAMPLE)

    decisions = _decisions(raw_decisions)
    assert decisions, "the example admits workloads, so it must produce decisions"
    by_cluster: dict[str, list[int]] = {}
    for d in decisions:
        assert {"seq", "cause", "type"} <= d.keys()
        by_cluster.setdefault(d.get("cluster", "default"), []).append(d["seq"])
    for cluster, seqs in by_cluster.items():
        assert seqs == list(range(1, len(seqs) + 1)), f"seq of {cluster} is not gap-free from 1"

    state = orjson.loads(raw_state)
    assert {"engineVersion", "hash", "time", "events", "clusters"} <= state.keys()
    n_lines = sum(1 for _ in iter_lines(str(EXAMPLE)))
    events = state["events"]
    assert (events["applied"], events["rejected"], events["duplicates"]) == (n_lines, 0, 0)
    assert "ml-east" in state["clusters"]
    assert "applied" in result.stderr and "events/s" in result.stderr


def test_replay_twice_is_byte_identical(tmp_path: Path) -> None:
    _, decisions1, state1 = _replay(tmp_path, EXAMPLE, "first")
    _, decisions2, state2 = _replay(tmp_path, EXAMPLE, "second")
    assert decisions1 == decisions2
    assert orjson.loads(state1)["hash"] == orjson.loads(state2)["hash"]
    assert state1 == state2


@pytest.mark.parametrize(
    ("bad_line", "expect_in_stderr"),
    [
        (b'{"id": "bad-1", "time": "2026-03-02T09:17:00Z", "type": ', "(id -)"),
        (b'{"id": "bad-1", "time": "2026-03-02T09:17:00Z", "cluster": "ml-east"}', "(id bad-1): type"),
    ],
    ids=["invalid-json", "missing-type"],
)
def test_broken_line_is_rejected_not_fatal(tmp_path: Path, bad_line: bytes, expect_in_stderr: str) -> None:
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    broken = tmp_path / "broken.ndjson"
    broken.write_bytes(b"".join(lines[:middle]) + bad_line + b"\n" + b"".join(lines[middle:]))

    result, decisions, raw_state = _replay(tmp_path, broken, "broken")
    _, clean_decisions, _ = _replay(tmp_path, EXAMPLE, "clean")

    state = orjson.loads(raw_state)
    assert state["events"]["rejected"] == 1
    assert state["events"]["applied"] == len(lines)
    assert f"rejected line {middle + 1} " in result.stderr
    assert expect_in_stderr in result.stderr
    assert "rejected 1" in result.stderr
    assert decisions == clean_decisions, "a rejected event must change nothing"


def test_gzip_input(tmp_path: Path) -> None:
    _, plain_decisions, plain_state = _replay(tmp_path, EXAMPLE, "plain")
    gz = tmp_path / "events.ndjson.gz"
    gz.write_bytes(gzip.compress(EXAMPLE.read_bytes(), mtime=0))
    _, gz_decisions, gz_state = _replay(tmp_path, gz, "gz")
    assert gz_decisions == plain_decisions
    assert gz_state == plain_state

    disguised = tmp_path / "events.ndjson"  # gzip content without the .gz suffix: detected by magic bytes
    disguised.write_bytes(gz.read_bytes())
    _, magic_decisions, _ = _replay(tmp_path, disguised, "magic")
    assert magic_decisions == plain_decisions


def test_stdin_and_stdout(tmp_path: Path) -> None:
    _, file_decisions, file_state = _replay(tmp_path, EXAMPLE, "file")
    _, stdin_decisions, stdin_state = _replay(tmp_path, "-", "stdin", stdin=EXAMPLE.read_bytes())
    assert stdin_decisions == file_decisions
    assert stdin_state == file_state

    result = _runner().invoke(app, ["replay", str(EXAMPLE), "--decisions-out", "-"])
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert result.stdout_bytes == file_decisions

    result = _runner().invoke(app, ["replay", str(EXAMPLE), "--state-out", "-"])
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert result.stdout_bytes == file_state


def test_missing_file_fails_cleanly(tmp_path: Path) -> None:
    result = _runner().invoke(app, ["replay", str(tmp_path / "nope.ndjson"), "--state-out", "-"])
    assert result.exit_code == 1
    assert "cannot read" in result.stderr


# --------------------------------------------------------------------------- state / version (demo: test_demo.py)


def test_state_json_matches_replay_state(tmp_path: Path) -> None:
    _, _, replay_state = _replay(tmp_path, EXAMPLE)
    result = _runner().invoke(app, ["state", str(EXAMPLE), "--json"])
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert result.stdout_bytes == replay_state


def test_state_tables_and_version() -> None:
    runner = _runner()
    tables = runner.invoke(app, ["state", str(EXAMPLE)])
    assert tables.exit_code == 0, (tables.stderr, tables.exception)
    for cq in ("research-a", "prod-a", "prod-b"):
        assert cq in tables.stdout

    version = runner.invoke(app, ["version"])
    assert version.exit_code == 0, (version.stderr, version.exception)
    assert version.stdout.startswith("quotaledger ")


# --------------------------------------------------------------------------- NDJSON reader


def test_iter_lines_numbers_lines_and_skips_blanks(tmp_path: Path) -> None:
    src = tmp_path / "x.ndjson"
    src.write_bytes(b'{"a":1}\n\n   \n{"b":2}\r\n{"c":3}')
    assert list(iter_lines(str(src))) == [(1, b'{"a":1}'), (4, b'{"b":2}'), (5, b'{"c":3}')]

    gz = tmp_path / "x.ndjson.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    assert list(iter_lines(str(gz))) == list(iter_lines(str(src)))


def test_example_is_valid_ndjson_with_increasing_times() -> None:
    times = []
    ids = set()
    for _, line in iter_lines(str(EXAMPLE)):
        event = orjson.loads(line)
        assert event["id"] not in ids
        ids.add(event["id"])
        times.append(event["time"])
    assert 30 <= len(times) <= 60
    assert times == sorted(times) and len(set(times)) == len(times)
