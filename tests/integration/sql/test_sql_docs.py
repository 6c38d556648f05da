"""docs/sql.md: every documented query runs on SQLite and PostgreSQL and gives the answer worked out
by hand from the example history (``history()`` below, checked in as tests/data/sql-docs.ndjson).

The story (times after 2026-01-01T00:00:00Z; cluster ``lab``; Cohort ``org`` with ClusterQueues
``research`` and ``prod``, 16 cpu and 4 GPUs nominal each, 8 GPUs in the cohort):

- day 0: r1 (4 GPUs) admitted at 10 s; r2 (2 GPUs) at 20 s, borrowing (research holds 6 of 4);
  p1 (4 GPUs) waits from 30 s: 6 of 8 GPUs are in use; two malformed events (lines 11, 12);
  r1 finishes at 1 h, p1 is admitted then (prod: 4 of 4).
- day 9: p2 (1 GPU) at 0 s, borrowing (prod 5 of 4); r3 (4 GPUs) waits from 60 s (7 of 8 in use)
  until p1 finishes at 2 h, then borrows (research 6 of 4); p2 is evicted by a node failure at
  3 h (observed) and readmitted at once (prod 1 of 4, no borrowing); prod is drained
  (``HoldAndDrain``) at 4 h: p2 evicted (``ClusterQueueStopped``), pending ``Suspended``;
  r4 (4 GPUs) waits from 5 h (6 of 8 in use), ``huge`` (16 GPUs) from 5 h 1 min can never fit
  (``ExceedsMaxQuota``); a Tick at 6 h ends the history.
- Admission fair sharing with half-life = sampling interval = 1 h: each hourly sample halves the
  distance to the LocalQueue's admitted usage (cpu cores and GPUs alike).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from decimal import Decimal

import sqlalchemy as sa

from replay.sql_sink import replay_to_db
from statemodel.version import ENGINE_VERSION
from tests.scenario.builder import GPU, START, Scenario
from tests.paths import ROOT

DOC = ROOT / "docs" / "sql.md"
DATA = ROOT / "tests" / "data" / "sql-docs.ndjson"
H, D = 3600, 86400
MS = 1000
T0 = int(START.timestamp()) * MS  # epoch ms of the scenario start


def history() -> Scenario:
    """The example history of docs/sql.md (see the module docstring)."""
    s = Scenario("lab")
    s.flavor("default", at=0)
    s.engine_config(halfLife="1h", interval="1h", at=1)
    s.cohort("org", at=2)
    s.cq("research", cohort="org", quotas={"cpu": "16", GPU: "4"}, at=3)
    s.cq("prod", cohort="org", quotas={"cpu": "16", GPU: "4"}, at=4)
    s.lq("research/train", "research", at=5)
    s.lq("prod/serve", "prod", at=6)
    s.submit("research/r1", "train", cpu="4", gpu="4", at=10)
    s.submit("research/r2", "train", cpu="2", gpu="2", at=20)
    s.submit("prod/p1", "serve", cpu="4", gpu="4", at=30)
    s.raw({"id": "bad-1", "time": "2026-01-01T00:00:40Z", "cluster": "lab", "type": "Applied", "object": {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"namespace": "prod", "name": "bad"},
        "spec": {"queueName": "serve", "podSets": [{"name": "main", "count": 1, "requests": {"cpu": "lots"}}]}}})
    s.raw({"id": "bad-2", "time": "2026-01-01T00:00:50Z", "cluster": "lab", "type": "Resize"})
    s.finish("research/r1", at=H)
    s.submit("prod/p2", "serve", cpu="1", gpu="1", at=9 * D)
    s.submit("research/r3", "train", cpu="4", gpu="4", at=9 * D + 60)
    s.finish("prod/p1", at=9 * D + 2 * H)
    s.evict("prod/p2", reason="NodeFailure", at=9 * D + 3 * H)
    s.cq("prod", cohort="org", quotas={"cpu": "16", GPU: "4"}, stop_policy="HoldAndDrain", at=9 * D + 4 * H)
    s.submit("research/r4", "train", cpu="4", gpu="4", at=9 * D + 5 * H)
    s.submit("research/huge", "train", cpu="1", gpu="16", at=9 * D + 5 * H + 60)
    s.tick(at=9 * D + 6 * H)
    return s


def queries() -> dict[int, tuple[str, str]]:
    """``{number: (title, sql)}`` of the ``### N. Title`` sections of docs/sql.md."""
    text = DOC.read_text()
    found = re.findall(r"^### (\d+)\. (.+?)\n.*?```sql\n(.*?)```", text, flags=re.S | re.M)
    return {int(n): (title, sql.strip().rstrip(";")) for n, title, sql in found}


def _t(seconds: float) -> int:
    return T0 + int(seconds * MS)


def _day(seconds: float) -> int:
    return _t(seconds) // (D * MS)


def _utc_date(value) -> str:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).date().isoformat()
    return str(value)[:10]


def _norm(value):
    if isinstance(value, Decimal):
        return float(value)
    return value


EXPECTED: dict[int, list[tuple]] = {
    # newest event 9 d 6 h → window from 2 d 6 h: r2 (admitted at 20 s) is out; p2 waits since 4 h (2 h),
    # r3 waited 60 s → 2 h (7140 s), r4 since 5 h (1 h), huge since 5 h 1 min (3540 s)
    1: [("lab", "prod/p2", "prod", "Pending", 7200), ("lab", "research/r3", "research", "Admitted", 7140),
        ("lab", "research/r4", "research", "Pending", 3600), ("lab", "research/huge", "research", "Pending", 3540)],
    # day 0: r1, r2 (borrows), p1; day 9: p2 (borrows), r3 (borrows), p2 again (no borrowing)
    2: [("org", _day(0), None, 3, 1), ("org", _day(9 * D), None, 3, 2)],
    # p1 waited from 30 s to 1 h: r1 (10 s, finished at 1 h) and r2 (20 s, still running) held GPUs
    3: [("research/r1", "research", _t(10), _t(H)), ("research/r2", "research", _t(20), None)],
    4: [("engine", "Evicted", "ClusterQueueStopped", 1), ("observed", "WorkloadEvicted", "NodeFailure", 1)],
    # prod: p2 (drained at 4 h); research: huge (ExceedsMaxQuota), r4 (WaitingForQuota, 1 h)
    5: [("lab", "prod", "Suspended", 1, 7200), ("lab", "research", "ExceedsMaxQuota", 1, 3540),
        ("lab", "research", "WaitingForQuota", 1, 3600)],
    # prod holds nothing after the drain; research holds r2 + r3: 6 cpu of 16, 6 GPUs of 4
    6: [("lab", "prod", "default", "cpu", 0, 16000, 0.0), ("lab", "prod", "default", GPU, 0, 4, 0.0),
        ("lab", "research", "default", "cpu", 6000, 16000, 37.5), ("lab", "research", "default", GPU, 6, 4, 150.0)],
    7: [("lab", "object.spec.podSets[0].requests[cpu]", "invalid quantity 'lots'", 1, 11),
        ("lab", "type", "unknown type 'Resize': must be one of Applied, Deleted, WorkloadAdmitted, "
                        "WorkloadEvicted, WorkloadFinished, Tick, Batch", 1, 12)],
    # p2: admitted by its own arrival (e-00012, borrowing), again by the eviction event (e-00015),
    # evicted by the drain (e-00016, the ClusterQueue re-applied)
    8: [(4, _t(9 * D), "Admitted", "prod", 1, None, "e-00012", "Applied"),
        (6, _t(9 * D + 3 * H), "Admitted", "prod", 0, None, "e-00015", "WorkloadEvicted"),
        (7, _t(9 * D + 4 * H), "Evicted", "prod", None, "ClusterQueueStopped", "e-00016", "Applied")],
    # --snapshot-every 10: after positions 0..9 (p1's arrival: 2 decisions so far), after 0..19 (huge:
    # 7 decisions; the rejected lines count as positions 10 and 11), and the final one after 21 events
    9: [("lab", 10, _t(30), 2), ("lab", 20, _t(9 * D + 5 * H + 60), 7), ("lab", 21, _t(9 * D + 6 * H), 7)],
    # research/train: 2 (r2) for days; samples at 0 h..2 h see 2 (r3 admitted at 2 h after the sample),
    # then 6: 3 h → 4, 4 h → 5, 5 h → 5.5, 6 h → 5.75.  prod/serve: 4 (p1) until day 9; 1 h, 2 h see 5
    # (p1 + p2): 4.5, 4.75; 3 h sees 1 (p1 gone): 2.875; 4 h sees 1: 1.9375; then 0: 0.96875, 0.484375.
    # Score = cpu cores + GPUs (weights 1).
    10: [("lab", "research/train", 11.5, 5.75, 5.75), ("lab", "prod/serve", 0.96875, 0.484375, 0.484375)],
    # at 6 h research holds r2 + r3 = 6 GPUs of the cohort's 8: r4 needs 4 GPUs, 2 are free (short by 2);
    # huge needs 16, research could at most ever get the cohort's 8 (short by 8); p2 is Suspended (none)
    11: [("lab", "research/huge", "main", "default", GPU, "research", "ExceedsMaxQuota", 16, 8, 8),
         ("lab", "research/r4", "main", "default", GPU, "research", "WaitingForQuota", 4, 2, 2)],
    # lab runs the kueue model: no quota groups (test_sql_koordinator.py runs it on a koordinator history)
    12: [],
    13: [],
}


def test_the_checked_in_history_is_the_documented_story() -> None:
    assert DATA.read_bytes() == history().events_ndjson()


def test_docs_hold_thirteen_queries_and_describe_every_column() -> None:
    assert sorted(queries()) == list(range(1, 14))
    from statemodel.sql_schema import metadata

    schema = DOC.read_text().split("## Thirteen queries")[0]
    missing = [f"{t.name}.{c.name}" for t in metadata.sorted_tables for c in t.columns
               if f"`{c.name}`" not in schema or f"`{t.name}`" not in schema]
    assert missing == []


def test_every_documented_query_gives_the_hand_worked_answer(db: str) -> None:
    replay_to_db(str(DATA), db, snapshot_every=10)
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            for number, (title, sql) in sorted(queries().items()):
                rows = [tuple(_norm(v) for v in row) for row in conn.execute(sa.text(sql))]
                if number == 2:  # first_admission: a timestamp (PostgreSQL) or its text (SQLite)
                    assert [_utc_date(r[2]) for r in rows] == ["2026-01-01", "2026-01-10"]
                    rows = [(r[0], r[1], None, r[3], r[4]) for r in rows]
                if number == 9:
                    assert all(r[4] == ENGINE_VERSION and len(r[5]) == 64 and r[6] > 0 for r in rows), title
                    rows = [r[:4] for r in rows]
                assert rows == EXPECTED[number], f"query {number} ({title})"
    finally:
        engine.dispose()
