"""deploy/grafana/dashboards/quotaledger.json: every SQL panel and variable runs on PostgreSQL — the
database Grafana's PostgreSQL data source talks to — as the read-only role that
deploy/postgres/grafana-reader.sql creates, after Grafana's interpolation (tests/grafana.py), and gives
the answers worked out by hand from the two documented histories of docs/sql.md, replayed into the
store with the project's own replay path:

- tests/data/sql-docs.ndjson (cluster ``lab``, the story of tests/integration/sql/test_sql_docs.py):
  decisions r1 (10 s) and r2 (20 s) admitted in hour 0 of day 0, p1 at 1 h; on day 9 p2 admitted at
  0 h, r3 at 2 h, p2 again at 3 h, p2 evicted by the drain at 4 h; 21 events, two of them rejected;
  at the end p2 (Suspended, 7,200 s), r4 (WaitingForQuota, 3,600 s) and huge (ExceedsMaxQuota,
  3,540 s) wait, r2 (wait 0 s) and r3 (waited 7,140 s) hold quota;
- tests/data/sql-docs-preemption.ndjson with its cluster renamed ``lab-preemption`` (the story of
  tests/integration/sql/test_sql_docs_preemption.py): r2 preempted at 30 s (InCohortReclamation),
  p2 at 50 s (InClusterQueue), five admissions, all in hour 0.

The role is created before the tables, so what it may read is what PostgreSQL's default privileges
give it on the tables ``quotaledger db upgrade`` creates later, as in the compose stack.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from replay.sql_sink import replay_to_db
from tests.grafana import READER_SQL_PATH, dashboard, interpolate_sql, sql_targets
from tests.paths import ROOT
from tests.scenario.builder import GPU, START
from tests.sqlhelpers import alembic_config, in_ci

DOCS = ROOT / "tests" / "data" / "sql-docs.ndjson"
PREEMPTION = ROOT / "tests" / "data" / "sql-docs-preemption.ndjson"
H, D = 3600, 86400
T0 = int(START.timestamp())  # epoch seconds of both histories' start
EVERYTHING = (START - timedelta(hours=1), START + timedelta(days=10))
DAY_0 = (START, START + timedelta(days=1))
ALL = {"cluster": ["lab", "lab-preemption"], "cluster_queue": ["prod", "research"]}
LAB = {"cluster": ["lab"], "cluster_queue": ["prod", "research"]}
PASSWORD = "reader's secret"


@pytest.fixture(scope="module")
def reader(postgres_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[sa.Engine]:
    """The store of both histories, as Grafana's read-only role sees it (module docstring)."""
    psql = shutil.which("psql")
    if psql is None:
        reason = "psql (the PostgreSQL client) is not installed: deploy/postgres/grafana-reader.sql needs it"
        if in_ci():
            pytest.fail(f"{reason} (CI=true: PostgreSQL tests must not be skipped)", pytrace=False)
        pytest.skip(reason)
    command.downgrade(alembic_config(postgres_url), "base")  # the run's database is shared: start empty
    url = sa.engine.make_url(postgres_url)
    role = f"grafana_reader_{uuid.uuid4().hex[:8]}"
    subprocess.run([psql, "-X", "-q", "-h", url.host or "127.0.0.1", "-p", str(url.port or 5432),
                    "-U", url.username or "postgres", "-d", url.database or "postgres",
                    "-v", f"reader={role}", "-f", str(READER_SQL_PATH)],
                   check=True, env={**os.environ, "GRAFANA_DB_PASSWORD": PASSWORD,
                                    **({"PGPASSWORD": url.password} if url.password else {})})
    renamed: Path = tmp_path_factory.mktemp("dashboard") / "preemption.ndjson"
    renamed.write_text(PREEMPTION.read_text().replace('"cluster":"lab"', '"cluster":"lab-preemption"'))
    replay_to_db(str(DOCS), postgres_url)
    replay_to_db(str(renamed), postgres_url)
    engine = sa.create_engine(url.set(username=role, password=PASSWORD), poolclass=sa.pool.NullPool)
    try:
        yield engine
    finally:
        engine.dispose()
        admin = sa.create_engine(postgres_url, poolclass=sa.pool.NullPool)
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP OWNED BY "{role}"'))
            conn.execute(sa.text(f'DROP ROLE "{role}"'))
        admin.dispose()


def _norm(value: object) -> object:
    if isinstance(value, Decimal | float):
        return float(value)
    return value


def _run(engine: sa.Engine, sql: str, variables: dict, span: tuple[datetime, datetime]) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(_norm(v) for v in row) for row in conn.execute(sa.text(interpolate_sql(sql, variables, *span)))]


def _panel(title: str) -> str:
    (sql,) = [s for t, s in sql_targets() if t == title]
    return sql


def test_the_variables_list_the_clusters_and_their_cluster_queues(reader: sa.Engine) -> None:
    variables = {v["name"]: v["query"] for v in dashboard()["templating"]["list"]}
    assert _run(reader, variables["cluster"], {}, EVERYTHING) == [("lab",), ("lab-preemption",)]
    assert _run(reader, variables["cluster_queue"], ALL, EVERYTHING) == [("prod",), ("research",)]


def test_every_sql_panel_runs_as_the_read_only_role(reader: sa.Engine) -> None:
    targets = sql_targets()
    assert len(targets) >= 6
    for title, sql in targets:
        for span in (EVERYTHING, DAY_0):
            _run(reader, sql, ALL, span)  # raises on a syntax error, a missing column or privilege
        assert _run(reader, sql, ALL, EVERYTHING), f"{title}: no rows from the whole history"


def test_the_read_only_role_cannot_write(reader: sa.Engine) -> None:
    for statement in ("DELETE FROM events", "UPDATE workloads SET status = 'Finished'",
                      "CREATE TABLE grafana_was_here (x int)"):
        with pytest.raises(sa.exc.ProgrammingError, match="permission denied"), reader.begin() as conn:
            conn.execute(sa.text(statement))


def test_decisions_per_hour(reader: sa.Engine) -> None:
    sql = _panel("Decisions per hour")
    assert [(int(t), kind, n) for t, kind, n in _run(reader, sql, LAB, EVERYTHING)] == [
        (T0, "Admitted", 2), (T0 + H, "Admitted", 1),
        (T0 + 9 * D, "Admitted", 1), (T0 + 9 * D + 2 * H, "Admitted", 1), (T0 + 9 * D + 3 * H, "Admitted", 1),
        (T0 + 9 * D + 4 * H, "Evicted", 1)]
    assert [(int(t), kind, n) for t, kind, n in _run(reader, sql, LAB, DAY_0)] == [
        (T0, "Admitted", 2), (T0 + H, "Admitted", 1)]
    preemption = {"cluster": ["lab-preemption"], "cluster_queue": ["prod"]}
    assert [(int(t), kind, n) for t, kind, n in _run(reader, sql, preemption, EVERYTHING)] == [
        (T0, "Admitted", 5), (T0, "Preempted", 2)]


def test_events_per_hour_by_status(reader: sa.Engine) -> None:
    # hour 0: the flavor, config, cohort, two ClusterQueues, two LocalQueues, r1, r2, p1 (10) and the two
    # malformed events; 1 h: r1 finishes; day 9: p2 and r3 (0 h), p1 finishes (2 h), p2 evicted (3 h),
    # prod drained (4 h), r4 and huge (5 h), the Tick (6 h)
    rows = [(int(t), status, n) for t, status, n in _run(reader, _panel("Events per hour by status"), LAB, EVERYTHING)]
    assert rows == [(T0, "applied", 10), (T0, "rejected", 2), (T0 + H, "applied", 1),
                    (T0 + 9 * D, "applied", 2), (T0 + 9 * D + 2 * H, "applied", 1), (T0 + 9 * D + 3 * H, "applied", 1),
                    (T0 + 9 * D + 4 * H, "applied", 1), (T0 + 9 * D + 5 * H, "applied", 2),
                    (T0 + 9 * D + 6 * H, "applied", 1)]


def test_longest_waits(reader: sa.Engine) -> None:
    sql = _panel("Longest waits")
    rows = [(r[1], r[3], r[5]) for r in _run(reader, sql, LAB, EVERYTHING)]
    assert rows == [("prod/p2", "Pending", 7200.0), ("research/r3", "Admitted", 7140.0),
                    ("research/r4", "Pending", 3600.0), ("research/huge", "Pending", 3540.0),
                    ("research/r2", "Admitted", 0.0)]
    # day 0 only: r3's admission (day 9) is out of range, the pending ones wait now
    assert [r[1] for r in _run(reader, sql, LAB, DAY_0)] == ["prod/p2", "research/r4", "research/huge", "research/r2"]
    only_prod = {"cluster": ["lab"], "cluster_queue": ["prod"]}
    assert [r[1] for r in _run(reader, sql, only_prod, EVERYTHING)] == ["prod/p2"]


def test_pending_reasons_now(reader: sa.Engine) -> None:
    assert _run(reader, _panel("Pending reasons now"), LAB, EVERYTHING) == [
        ("lab", "prod", "Suspended", 1, 7200.0), ("lab", "research", "ExceedsMaxQuota", 1, 3540.0),
        ("lab", "research", "WaitingForQuota", 1, 3600.0)]


def test_preemptions_per_hour_by_reason(reader: sa.Engine) -> None:
    sql = _panel("Preemptions per hour by reason")
    preemption = {"cluster": ["lab-preemption"], "cluster_queue": ["prod", "research"]}
    assert [(int(t), reason, n) for t, reason, n in _run(reader, sql, preemption, EVERYTHING)] == [
        (T0, "InClusterQueue", 1), (T0, "InCohortReclamation", 1)]
    assert _run(reader, sql, LAB, EVERYTHING) == []


def test_rejected_events_by_reason(reader: sa.Engine) -> None:
    assert _run(reader, _panel("Rejected events by reason"), LAB, EVERYTHING) == [
        ("lab", "object.spec.podSets[0].requests[cpu]", "invalid quantity 'lots'", 1, 11),
        ("lab", "type", "unknown type 'Resize': must be one of Applied, Deleted, WorkloadAdmitted, "
                        "WorkloadEvicted, WorkloadFinished, Tick, Batch", 1, 12)]


def test_quota_use_per_cluster_queue(reader: sa.Engine) -> None:
    # at the end prod holds nothing (drained), research r2 + r3: 6 cpu of 16 and 6 GPUs of 4
    assert _run(reader, _panel("Quota use per ClusterQueue (store)"), LAB, EVERYTHING) == [
        ("lab", "prod", "default", "cpu", 0, 16000, 0.0), ("lab", "prod", "default", GPU, 0, 4, 0.0),
        ("lab", "research", "default", "cpu", 6000, 16000, 37.5), ("lab", "research", "default", GPU, 6, 4, 150.0)]
