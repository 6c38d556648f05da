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


# --------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["replay", "{tmp}/nope.ndjson"], 1, "error: cannot read {tmp}/nope.ndjson: "),
        (["state"], 2, "error: give an EVENTS file or --db"),
        (["state", "{example}", "--seq", "3"], 2, "error: --seq needs --db"),
        (["state", "{example}", "--at", "yesterday"], 2, "error: --at: invalid time 'yesterday'"),
        (["state", "--db", "sqlite:///{tmp}/empty.db", "--at", "-1h", "--seq", "3"], 2,
         "error: give --at or --seq, not both"),
        (["state", "-", "--at", "-1h"], 2, "error: --at: a relative time needs the history's bounds"),
        (["state", "{example}", "--db", "sqlite:///{tmp}/empty.db"], 2, "error: give an EVENTS file or --db, not both"),
        (["list", "{example}", "--db", "sqlite:///{tmp}/empty.db"], 2, "error: give an EVENTS file or --db, not both"),
        (["simulate", "--out", "{tmp}/o.ndjson", "--tick", "5 minutes"], 2, "error: --tick: invalid duration"),
        (["explain", "ns/x"], 2, "error: give an EVENTS file or --db"),
        (["explain", "team-a/none", "{example}"], 1, "error: no workload team-a/none in cluster ml-east"),
        (["replay", "{example}", "--db", "sqlite:///{tmp}/s.db", "--snapshot-every-time", "0s"], 2,
         "error: --snapshot-every-time must be positive"),
        (["verify", "--db", "sqlite:///{tmp}/empty.db"], 2, "has no quotaledger schema"),
        (["state", "--db", "sqlite:///{tmp}/empty.db"], 1, "error: cannot use the database: "),
        (["db", "upgrade", "nosuchrev", "--db", "sqlite:///{tmp}/m.db"], 1, "error: Can't locate revision"),
    ],
    ids=["unreadable-events", "no-source", "seq-without-db", "bad-time", "at-and-seq", "relative-on-stdin",
         "events-and-db", "list-events-and-db",
         "bad-tick", "explain-no-source", "unknown-workload",
         "zero-snapshot-interval", "verify-failure-is-2", "database-error", "alembic-error"],
)
def test_failures_exit_with_their_code_and_one_error_line(
        tmp_path: Path, args: list[str], code: int, message: str) -> None:
    """Each failure is one ``error:`` line on stderr (no traceback) and the exit code of its kind."""
    (tmp_path / "empty.db").touch()  # an existing file without the schema (SQLite reads it as empty)
    argv = [a.format(tmp=tmp_path, example=EXAMPLE) for a in args]
    result = _runner().invoke(app, argv)
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message.format(tmp=tmp_path) in errors[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [
    ["state", "--db", "sqlite:///{db}"],
    ["state", "--db", "sqlite:///{db}", "--at", "2025-01-01T00:00:00Z"],
    ["explain", "ns/x", "--db", "sqlite:///{db}"],
    ["verify", "--db", "sqlite:///{db}"],
    ["whatif", "--db", "sqlite:///{db}", "--patch", "{example}"],
], ids=["state", "state-at", "explain", "verify", "whatif"])
def test_read_only_commands_do_not_create_a_store(tmp_path: Path, args: list[str]) -> None:
    """A read-only command pointed at a SQLite file that does not exist says so (one ``error:`` line
    naming the file) and leaves no empty database behind."""
    missing = tmp_path / "typo.db"
    result = _runner().invoke(app, [a.format(db=missing, example=EXAMPLE) for a in args])
    assert result.exit_code in (1, 2), (result.stdout, result.stderr, result.exception)
    assert f"error: no store at sqlite:///{missing}: the file {missing} does not exist" in result.stderr
    assert not missing.exists()
    assert list(tmp_path.iterdir()) == []


def test_command_modules_do_not_import_the_app() -> None:
    """``quotaledger.cli`` sits on top: no command or view module imports it (no import cycle)."""
    import pkgutil
    import subprocess
    import sys

    import quotaledger.commands
    import quotaledger.views

    modules = [f"{pkg.__name__}.{m.name}" for pkg in (quotaledger.commands, quotaledger.views)
               for m in pkgutil.iter_modules(pkg.__path__)]
    probe = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n" \
            "print('quotaledger.cli' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe, *modules], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr


# --------------------------------------------------------------------------- state / version (demo: test_demo.py)


def test_state_json_matches_replay_state(tmp_path: Path) -> None:
    _, _, replay_state = _replay(tmp_path, EXAMPLE)
    result = _runner().invoke(app, ["state", str(EXAMPLE), "--json"])
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert result.stdout_bytes == replay_state


def _org(tmp_path: Path) -> Path:
    """org ⊃ (team ⊃ ClusterQueues a, b), ClusterQueue c; ns/w2 waits in a (its 1 cpu is taken)."""
    from tests.scenario.builder import Scenario

    s = Scenario()
    s.flavor("default")
    s.cohort("org")
    s.cohort("team", parent="org")
    for name, parent in (("a", "team"), ("b", "team"), ("c", "org")):
        s.cq(name, cohort=parent, quotas={"cpu": ("1", "0", None)})
        s.lq(f"ns/{name}", name)
    s.submit("ns/w1", "a", cpu="1")
    s.submit("ns/w2", "a", cpu="1")
    path = tmp_path / "org.ndjson"
    path.write_bytes(s.events_ndjson())
    return path


@pytest.mark.parametrize(("options", "shown", "hidden"), [
    ([], ["Cohort org", "Cohort team", "ClusterQueue a", "ClusterQueue b", "ClusterQueue c", "LocalQueue ns/b"], []),
    (["--queue", "a"], ["Cohort org", "Cohort team", "ClusterQueue a", "LocalQueue ns/a"],
     ["ClusterQueue b", "ClusterQueue c"]),
    (["--cohort", "team"], ["Cohort team", "ClusterQueue a", "ClusterQueue b"], ["Cohort org", "ClusterQueue c"]),
    (["--depth", "0"], ["Cohort org"], ["Cohort team", "ClusterQueue c"]),
    (["--depth", "1"], ["Cohort org", "Cohort team", "ClusterQueue c"], ["ClusterQueue a", "LocalQueue ns/c"]),
    (["--pending-only"], ["Cohort org", "Cohort team", "ClusterQueue a", "LocalQueue ns/a"],
     ["ClusterQueue b", "ClusterQueue c", "LocalQueue ns/b"]),
], ids=["all", "queue", "cohort", "depth-0", "depth-1", "pending-only"])
def test_state_draws_the_same_filtered_tree_from_a_file_and_a_store(
        tmp_path: Path, options: list[str], shown: list[str], hidden: list[str]) -> None:
    path = _org(tmp_path)
    url = f"sqlite:///{tmp_path}/s.db"
    assert _runner().invoke(app, ["replay", str(path), "--db", url]).exit_code == 0
    from_file = _runner().invoke(app, ["state", str(path), *options])
    from_store = _runner().invoke(app, ["state", "--db", url, *options])
    assert from_file.exit_code == 0 and from_store.exit_code == 0, (from_file.stderr, from_store.stderr)
    assert from_file.stdout == from_store.stdout
    for label in shown:
        assert label in from_file.stdout, label
    for label in hidden:
        assert label not in from_file.stdout, label


def test_state_tree_filters_are_not_for_json_and_version() -> None:
    runner = _runner()
    result = runner.invoke(app, ["state", str(EXAMPLE), "--json", "--depth", "1"])
    assert result.exit_code == 2 and "not with --json" in result.stderr

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


@pytest.mark.parametrize(("words", "cword", "expected"), [
    ("quotaledger rep", 1, "replay"),
    ("quotaledger db down", 2, "downgrade"),
    ("quotaledger state --j", 2, "--json"),
])
def test_shell_completion_completes_commands_and_options(words: str, cword: int, expected: str) -> None:
    """Typer's shell completion is on: the bash protocol (what ``--install-completion`` installs)
    completes command, sub-command and option names."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, _QUOTALEDGER_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(cword))
    script = Path(sys.executable).with_name("quotaledger")  # the console script the package installs
    out = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == [expected], out


# --------------------------------------------------------------------------- time options and the cluster rule


def _ok(args: list[str]):
    result = _runner().invoke(app, args)
    assert result.exit_code == 0, (args, result.stdout, result.stderr, result.exception)
    return result


def test_relative_and_dated_moments_on_a_file_and_a_store(tmp_path: Path) -> None:
    """The example runs from 2026-03-02T09:00:00Z to 10:00:00Z: ``-1h`` (before the end) and ``0``
    (after the start) are both its first moment, in a file and in a store; a moment outside the
    stored history is warned about."""
    first = "2026-03-02T09:00:00Z"
    by_time = _ok(["state", str(EXAMPLE), "--at", first, "--json"]).stdout
    assert _ok(["state", str(EXAMPLE), "--at", "-1h", "--json"]).stdout == by_time
    assert _ok(["state", str(EXAMPLE), "--at", "0", "--json"]).stdout == by_time
    assert _ok(["state", str(EXAMPLE), "--at", "-30m", "--json"]).stdout != by_time

    url = f"sqlite:///{tmp_path}/s.db"
    _ok(["replay", str(EXAMPLE), "--db", url])
    stored = _ok(["state", "--db", url, "--at", first, "--json"]).stdout
    assert _ok(["state", "--db", url, "--at", "-1h", "--json"]).stdout == stored
    before = _ok(["state", "--db", url, "--at", "2026-03-01"])
    assert ("warning: --at 2026-03-01T00:00:00Z is before the first event of cluster ml-east "
            "(2026-03-02T09:00:00Z)") in before.stderr
    after = _ok(["state", "--db", url, "--at", "2026-03-03"])
    assert "is after the last event of cluster ml-east (2026-03-02T10:00:00Z)" in after.stderr
    assert "warning" not in _ok(["state", "--db", url, "--at", "-30m"]).stderr


def test_explain_takes_the_only_cluster_of_a_file_and_asks_when_there_are_several(tmp_path: Path) -> None:
    """One rule for files and stores: the only cluster, else ``--cluster`` (exit 2, naming them)."""
    one = _ok(["explain", "research/train-llm-1", str(EXAMPLE), "--json"])
    assert orjson.loads(one.stdout)["workload"] == "research/train-llm-1"
    lines = EXAMPLE.read_bytes().splitlines()
    west = [line.replace(b'"cluster":"ml-east"', b'"cluster":"ml-west"') for line in lines]
    two = tmp_path / "two.ndjson"
    two.write_bytes(b"\n".join(lines + west) + b"\n")
    result = _runner().invoke(app, ["explain", "research/train-llm-1", str(two)])
    assert result.exit_code == 2
    assert "error: give --cluster: the events hold 2 clusters (ml-east, ml-west)" in result.stderr
    _ok(["explain", "research/train-llm-1", str(two), "--cluster", "ml-west"])
