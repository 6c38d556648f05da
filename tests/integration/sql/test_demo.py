"""``quotaledger demo`` end to end: a hand-made trace whose report numbers are worked out by hand,
the output folder (plots, page, manifests), ``verify`` on its database, determinism, the default
(DLRM) trace, and the shipped copy of the DLRM trace."""

from __future__ import annotations

import gzip
import hashlib
import json
from fractions import Fraction
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sim import traces
from replay.sim.importers.jobs import TraceImportError
from replay.reports.tables import build_report, percentile
from replay.reports.page import example_queries
from replay.verify import verify
from tests.paths import DATA

LAB = DATA / "demo_lab"
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, the mapping's epoch_base
DLRM_SHA256 = "fb17bc4b3f412d5280f70f04a1bdf2adfc4429d1e61237a5b106e86206414295"  # shared SHA256SUMS


def _runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def _demo(out: Path, *args: str):
    result = _runner().invoke(app, ["demo", "--out", str(out), *args])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


def _lab(out: Path, *args: str):
    return _demo(out, "--trace", str(LAB / "jobs.csv"), "--mapping", str(LAB / "mapping.yaml"),
                 "--quota", str(LAB / "quota"), "--until", "200", *args)


def test_hand_made_trace_report(tmp_path: Path, db: str) -> None:
    # Cohort lab; ClusterQueues team-a and team-b, 4 cpu each, no limits; span 0-200 s (--until 200).
    #   a1 team-a 4 cpu, submit 0, runs 100 s -> admitted 0, ends 100
    #   a2 team-a 4 cpu, submit 10, runs 50 s -> admitted 10 borrowing team-b's idle 4 cpu, ends 60
    #   b1 team-b 4 cpu, submit 20, runs 50 s -> waits for a2 (cohort full): admitted 60, ends 110
    #   b2 team-b 2 cpu, submit 30, runs 10 s -> waits for a1: admitted 100 borrowing team-a's, ends 110
    # Observed waits (start - submit in the CSV): a1 0, a2 5 s, b1 0, b2 5 s.
    out = tmp_path / "out"
    cli = _lab(out, "--db", db)
    assert str(out) in cli.stdout and db in cli.stdout
    report = build_report(db, "lab", start_ms=T0, end_ms=T0 + 200_000)
    a, b, lab = report.node("team-a"), report.node("team-b"), report.node("lab")
    assert (lab.kind, lab.depth, a.parent, b.depth) == ("Cohort", 0, "lab", 1)
    assert [n.name for n in report.nodes] == ["lab", "team-a", "team-b"]
    assert (a.admitted, b.admitted, lab.admitted) == (2, 2, 4)
    assert (a.waits_ms, b.waits_ms, lab.waits_ms) == ([0, 0], [40_000, 70_000], [0, 0, 40_000, 70_000])
    assert [percentile(lab.waits_ms, p) for p in (50, 95, 100)] == [0, 70_000, 70_000]
    assert [percentile(b.waits_ms, p) for p in (50, 95, 100)] == [40_000, 70_000, 70_000]
    # cpu ∫ usage dt: team-a 4 x 100 s + 4 x 50 s = 600 core-s; team-b 4 x 50 s + 2 x 10 s = 220 core-s
    assert (a.usage_ms["cpu"], b.usage_ms["cpu"]) == (600 * 1000 * 1000, 220 * 1000 * 1000)
    assert (a.utilization("cpu"), b.utilization("cpu"), lab.utilization("cpu")) == \
           (Fraction(600, 800), Fraction(220, 800), Fraction(820, 1600))
    # team-a above its 4 cpu during 10-60 s, team-b during 100-110 s; a root cohort never borrows
    assert (a.borrowing_ms, b.borrowing_ms, lab.borrowing_ms) == (50_000, 10_000, 0)
    # team-b idle while team-a borrows (10-60 s); team-a has 4 idle cpu while team-b borrows (100-110 s)
    assert (a.lent_ms, b.lent_ms, lab.lent_ms) == (10_000, 50_000, 0)
    # team-b: b1 pending 20-60, b2 30-100 -> 2 at once; a2 was admitted by its own submission event
    assert (a.pending_peak, b.pending_peak, lab.pending_peak) == (0, 2, 2)
    assert (lab.pending_at_end, lab.running_at_start) == (0, 0)
    assert report.top == ["team-a", "team-b"] and report.headline == {"team-a": "cpu", "team-b": "cpu"}
    assert report.usage_series["team-b"] == [(T0, 0), (T0 + 60_000, 4000), (T0 + 100_000, 6000), (T0 + 110_000, 0)]
    assert report.pending_series["team-b"] == [(T0, 0), (T0 + 20_000, 1), (T0 + 30_000, 2), (T0 + 60_000, 1),
                                               (T0 + 100_000, 0)]

    # the demo's own report also has the trace's observed waits (start - submit in the CSV)
    saved = {n["name"]: n for n in json.loads((out / "report.json").read_text())["nodes"]}
    assert saved["team-a"]["observed_waits_ms"] == saved["team-b"]["observed_waits_ms"] == [0, 5000]
    assert saved["lab"]["observed_waits_ms"] == [0, 0, 5000, 5000]
    assert saved["team-b"]["lent_ms"] == b.lent_ms

    for name in ("usage_vs_quota.png", "pending.png", "wait_cdf.png"):
        data = (out / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10_000
    page = (out / "index.html").read_text()
    for text in ("team-a", "75.0%", "27.5%", "51.2%", "40s/1m10s/1m10s", 'src="wait_cdf.png"', "SELECT"):
        assert text in page
    assert sorted(p.name for p in (out / "quota").iterdir()) == [
        "10-resource-flavors.yaml", "20-cohorts.yaml", "30-cluster-queues.yaml", "40-local-queues.yaml"]

    checked = verify(db)
    assert checked.ok and checked.events == 14 and checked.decisions == 4

    dbe = sa.create_engine(db, poolclass=sa.pool.NullPool)
    with dbe.connect() as conn:
        rows = [conn.execute(sa.text(sql)).fetchall() for _, sql in example_queries("lab")]
    dbe.dispose()
    assert sorted(tuple(r) for r in rows[0]) == [("team-a", 2), ("team-b", 2)]
    assert tuple(rows[1][0]) == ("bob/b2", "team-b", 70)
    assert [r[0] for r in rows[2]] == ["lab"]


def test_a_database_password_is_shown_nowhere(tmp_path: Path, postgres_url: str) -> None:
    """The URL's password (the test server trusts local connections, so any works) appears neither on
    the console nor in index.html: every place shows ``replay.store.db.redacted``."""
    from alembic import command

    from tests.sqlhelpers import alembic_config

    command.downgrade(alembic_config(postgres_url), "base")
    secret_url = sa.engine.make_url(postgres_url).set(username="postgres", password="s3cret-pw").render_as_string(
        hide_password=False)
    out = tmp_path / "out"
    cli = _lab(out, "--db", secret_url)
    shown = sa.engine.make_url(secret_url).render_as_string(hide_password=True)
    assert "s3cret-pw" not in cli.stdout + cli.stderr and shown in cli.stdout and ":***@" in shown
    page = (out / "index.html").read_text()
    assert "s3cret-pw" not in page and shown in page
    for command_line in (["verify", "--db", secret_url], ["db", "upgrade", "--db", secret_url]):
        result = _runner().invoke(app, command_line)
        assert result.exit_code == 0 and "s3cret-pw" not in result.stdout + result.stderr
    broken = _runner().invoke(app, ["verify", "--db", "postgresql+psycopg://u:s3cret-pw@127.0.0.1:1/x"])
    assert broken.exit_code != 0 and "s3cret-pw" not in broken.stdout + broken.stderr

def test_two_runs_write_the_same_history(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _lab(first)
    _lab(second)
    assert (first / "events.ndjson").read_bytes() == (second / "events.ndjson").read_bytes()
    assert (first / "report.json").read_text() == (second / "report.json").read_text()
    # rerunning into the same folder replaces the cluster in its database
    again = _lab(first)
    assert "SQL store:" in again.stdout
    assert verify(f"sqlite:///{first / 'quotaledger.db'}").ok


def test_default_trace_runs_and_its_database_verifies(tmp_path: Path) -> None:
    out = tmp_path / "dlrm"
    result = _demo(out, "--until", "12h")
    runner = _runner().invoke(app, ["verify", "--db", f"sqlite:///{(out / 'quotaledger.db').resolve()}"])
    assert runner.exit_code == 0 and runner.stdout.startswith("OK: "), runner.stdout
    assert result.stdout.count("ClusterQueue") >= 32  # 16 app groups per role
    hash_line = runner.stdout.split("hash ")[1].strip()
    assert hash_line in result.stdout  # the simulation and the SQL archive end in the same hash
    for name in ("usage_vs_quota.png", "pending.png", "index.html"):
        assert (out / name).stat().st_size > 0


def test_a_missing_trace_is_a_clear_error(tmp_path: Path) -> None:
    result = _runner().invoke(app, ["demo", "--out", str(tmp_path), "--trace", str(tmp_path / "nope.csv")])
    assert result.exit_code == 1
    assert "no such trace" in result.stderr


def test_shipped_dlrm_trace_is_the_published_file() -> None:
    shipped = Path(str(traces.files("replay.sim").joinpath("traces_data", traces.SHIPPED["dlrm"])))
    data = gzip.decompress((shipped / "disaggregated_DLRM_trace.csv.gz").read_bytes())
    assert len(data) == 2_118_900
    assert hashlib.sha256(data).hexdigest() == DLRM_SHA256
    assert "NSDI" in (shipped / "README.md").read_text()


def test_fresh_clone_finds_dlrm_in_the_package_and_names_what_openb_needs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a fresh clone: no shared folder beside the repository, $QUOTALEDGER_TRACES without the traces
    monkeypatch.setattr(traces, "_beside_repository", lambda: None)
    monkeypatch.setenv("QUOTALEDGER_TRACES", str(tmp_path))
    assert traces.trace_dir("dlrm").parts[-2:] == ("traces_data", "alibaba-gpu-v2025-dlrm")
    with pytest.raises(TraceImportError, match="not shipped"):
        traces.trace_dir("openb")
    # $QUOTALEDGER_TRACES comes first
    (tmp_path / "alibaba-gpu-v2025-dlrm").mkdir()
    assert traces.trace_dir("dlrm") == tmp_path / "alibaba-gpu-v2025-dlrm"


# --------------------------------------------------------------------------- property: the report agrees with the simulation

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from replay.sim.importers.jobs import ImportResult, Job  # noqa: E402
from replay.sim.manifests import load_manifests  # noqa: E402
from replay.sim.simulator import simulate  # noqa: E402
from replay.sql_sink import replay_to_db  # noqa: E402

_JOBS = st.lists(st.tuples(st.sampled_from(["team-a", "team-b"]), st.integers(0, 60), st.integers(1, 80),
                           st.sampled_from([1000, 2000, 3000, 4000])), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=_JOBS)
def test_report_agrees_with_the_simulation(tmp_path: Path, rows: list[tuple[str, int, int, int]]) -> None:
    # random jobs on the hand-made quota (4 cpu per team, all lendable), span 0-200 s; the report
    # read back from SQL must agree with what the simulator itself saw, computed here independently
    users = {"team-a": "ann", "team-b": "bob"}
    jobs = [Job(f"j{i}", T0 + s * 1000, r * 1000, (team, users[team]), 1, (("cpu", cpu),))
            for i, (team, s, r, cpu) in enumerate(rows)]
    trace = ImportResult("lab", jobs, [], T0, T0 + 200_000)
    config = load_manifests(LAB / "quota", "lab")
    events = tmp_path / f"e{len(list(tmp_path.iterdir()))}.ndjson"
    sim = simulate(trace, config, events, until_ms=T0 + 200_000, tick_ms=0)
    url = f"sqlite:///{events.with_suffix('.db')}"
    replay_to_db(str(events), url)
    report = build_report(url, "lab", start_ms=T0, end_ms=T0 + 200_000)
    end = T0 + 200_000
    for team in ("team-a", "team-b"):
        mine = [(f"{users[team]}/j{i}", j) for i, j in enumerate(jobs) if j.tenant[0] == team]
        admitted = [(k, j) for k, j in mine if k in sim.admitted_at]
        node = report.node(team)
        assert node.admitted == len(admitted)
        assert node.waits_ms == sorted(sim.admitted_at[k] - j.submit_ms for k, j in admitted)
        assert node.usage_ms.get("cpu", 0) == sum(
            j.requests[0][1] * (min(sim.admitted_at[k] + j.run_ms, end) - sim.admitted_at[k]) for k, j in admitted)
        assert node.pending_at_end == len(mine) - len(admitted)
    lab, a, b = report.node("lab"), report.node("team-a"), report.node("team-b")
    assert lab.usage_ms.get("cpu", 0) == a.usage_ms.get("cpu", 0) + b.usage_ms.get("cpu", 0)
    assert lab.waits_ms == sorted(a.waits_ms + b.waits_ms)
    assert lab.borrowing_ms == 0 and lab.utilization("cpu") <= 1  # the cohort holds 8 cpu, no more
    # one team borrows exactly while the other has idle quota to lend (the cohort has no quota of its own)
    assert (a.borrowing_ms, b.borrowing_ms) == (b.lent_ms, a.lent_ms)


def test_bad_rows_and_bad_options_are_reported_by_line_and_name(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text((LAB / "jobs.csv").read_text() + "x9,team-a,ann,soon,0,10,4\n")
    result = _demo(tmp_path / "out", "--trace", str(trace), "--mapping", str(LAB / "mapping.yaml"),
                   "--quota", str(LAB / "quota"), "--until", "200")
    assert "skipped line 6: submit" in result.stderr  # the other four jobs still run
    assert "4 jobs, 1 rows skipped" in result.stderr
    bad = _runner().invoke(app, ["demo", "--out", str(tmp_path / "o2"), "--trace", str(LAB / "jobs.csv"),
                                 "--mapping", str(LAB / "mapping.yaml"), "--until", "next week"])
    assert bad.exit_code == 1 and "error: --until:" in bad.stderr


def test_summary_numbers_of_a_hand_worked_history(tmp_path: Path) -> None:
    from replay.reports import summary
    from replay.reports.page import sections

    # the lab story of test_hand_made_trace_report, with priorities that keep its order:
    #   a1 (100) submit 0 admitted 0 ends 100; a2 (100) submit 10 admitted 10 ends 60;
    #   b1 (5) submit 20 admitted 60 ends 110; b2 (0) submit 30 admitted 100 ends 110
    jobs = [Job("a1", T0, 100_000, ("team-a", "ann"), 1, (("cpu", 4000),), priority=100),
            Job("a2", T0 + 10_000, 50_000, ("team-a", "ann"), 1, (("cpu", 4000),), priority=100),
            Job("b1", T0 + 20_000, 50_000, ("team-b", "bob"), 1, (("cpu", 4000),), priority=5),
            Job("b2", T0 + 30_000, 10_000, ("team-b", "bob"), 1, (("cpu", 2000),), priority=0)]
    events = tmp_path / "e.ndjson"
    simulate(ImportResult("lab", jobs, [], T0, T0 + 200_000), load_manifests(LAB / "quota", "lab"), events,
             until_ms=T0 + 200_000, tick_ms=0)
    url = f"sqlite:///{tmp_path / 'e.db'}"
    replay_to_db(str(events), url)
    report = build_report(url, "lab", start_ms=T0, end_ms=T0 + 200_000)
    a, b, lab = report.node("team-a"), report.node("team-b"), report.node("lab")

    # JCT = finish - submit; bounded slowdown = max(1, JCT / max(run, 10 s))
    classes = {st.priority_class: st for st in summary.priority_classes(report)}
    assert sorted(classes) == ["priority 0", "priority 100", "priority 5"]
    assert (classes["priority 100"].jct_ms, classes["priority 100"].slowdown) == ([50_000, 100_000], [1, 1])
    assert (classes["priority 5"].waits_ms, classes["priority 5"].jct_ms) == ([40_000], [90_000])
    assert classes["priority 5"].slowdown == [Fraction(90, 50)]        # run 50 s
    assert classes["priority 0"].slowdown == [Fraction(80, 10)]        # run 10 s
    assert classes["priority 0"].mean_slowdown() == 8
    assert summary.bounded_slowdown(5_000, 1_000) == 1          # (5 + 1) / 10 < 1: bounded below by 1
    assert summary.bounded_slowdown(25_000, 5_000) == 3        # (25 + 5) / max(5, 10)
    assert summary.bounded_slowdown(0, 1_000) == 1             # never below 1

    # pending: team-b 20-100 s; its 4 cpu are unused while b1 waits (20-60), full with b1 after;
    # the cohort's 8 cpu are in use all that time (a1 + a2, then a1 + b1)
    assert (b.pending_ms, b.pending_room_ms, b.pending_idle_ms) == (80_000, 40_000, 0)
    assert (a.pending_ms, a.pending_room_ms, a.pending_idle_ms) == (0, 0, 0)
    assert (lab.pending_ms, lab.pending_room_ms, lab.pending_idle_ms) == (80_000, 0, None)

    # Jain over usage / nominal: team-a 600/800, team-b 220/800 -> (41/40)^2 / (2 x 1021/1600) = 1681/2042
    assert summary.fairness(report) == [("all", 2, Fraction(1681, 2042))]
    assert summary.jain_index([Fraction(1), Fraction(0)]) == Fraction(1, 2)
    assert summary.jain_index([Fraction(0)]) is None

    waits = summary.wait_summary(report)
    assert [(w.node.name, w.simulated) for w in waits] == [
        ("lab", (0, 70_000, 70_000, 70_000)), ("team-a", (0, 0, 0, 0)), ("team-b", (40_000, 70_000, 70_000, 70_000))]
    assert waits[0].n_observed == 0  # no observed waits passed: the page says so

    # the longest waits, explained as of their submission: b2 at 30 s is short of 2 cpu and the root
    # cohort lab binds (its 8 cpu held by a1 and a2)
    longest = summary.longest_waits(url, report)
    assert [(w.workload, w.wait_ms) for w in longest] == [("bob/b2", 70_000), ("bob/b1", 40_000)]
    first = longest[0]
    assert first.reason == "WaitingForQuota"
    assert [(x["kind"], x["name"], x["root"], x["resource"], x["needed"], x["available"]) for x in first.binding] == [
        ("Cohort", "lab", True, "cpu", 2000, 0)]
    assert first.command == f"quotaledger explain bob/b2 --db {url} --at 2026-01-01T00:00:30Z"
    explained = _runner().invoke(app, first.command.split()[1:] + ["--json"])
    assert explained.exit_code == 0 and json.loads(explained.stdout)["binding"] == list(first.binding)
    titles = [sec.title for sec in sections(report, longest)]
    assert titles[0].startswith("Waits per") and titles[-1] == "The longest waits and what bound them"
    assert not any(t.startswith("Preemptions") for t in titles)  # none happened
    assert sections(report, longest)[0].rows[0][7] == "no observed wait in the trace"


def test_quota_scale_through_the_command_line(tmp_path: Path) -> None:
    lab = ["--trace", str(LAB / "jobs.csv"), "--mapping", str(LAB / "mapping.yaml")]

    def simulate_with(*args: str):
        return _runner().invoke(app, ["simulate", "--out", str(tmp_path / "e.ndjson"), "--tick", "0", *lab, *args])

    # the generated lab tree over the observed span 0-100 s: team-a median 4 (a1 alone half the time),
    # peak 8 -> nominal 4 + borrowing 4; team-b median 0, peak 6 -> 0 + 6; the root holds the p99 of
    # the whole demand (14) - 4 = 10.  It admits all four jobs.  At 0.25: team-a may reach 1 + 1 cpu,
    # team-b 0 + 1.5 cpu, and every job asks for 2 or 4: none is admitted
    full = simulate_with("--quota-out", str(tmp_path / "q1"))
    assert full.exit_code == 0, full.stderr
    assert "4 admitted" in full.stdout and ", 0 pending" in full.stdout
    quarter = simulate_with("--quota-scale", "0.25", "--quota-out", str(tmp_path / "q2"))
    assert quarter.exit_code == 0, quarter.stderr
    assert "every quota x 0.25 (--quota-scale)" in quarter.stderr
    assert "0 admitted" in quarter.stdout and ", 4 pending" in quarter.stdout
    cqs1 = (tmp_path / "q1" / "30-cluster-queues.yaml").read_text()
    cqs2 = (tmp_path / "q2" / "30-cluster-queues.yaml").read_text()
    assert cqs1 != cqs2
    for bad, message in (("0", "must be greater than 0"), ("lots", "is not a number")):
        result = simulate_with("--quota-scale", bad)
        assert result.exit_code == 1 and f"--quota-scale: '{bad}' {message}" in result.stderr
    with_folder = simulate_with("--quota", str(LAB / "quota"), "--quota-scale", "0.5")
    assert with_folder.exit_code == 1 and "edit the manifests instead" in with_folder.stderr
