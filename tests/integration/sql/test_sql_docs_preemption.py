"""docs/sql.md "Preemption queries": every query runs on SQLite and PostgreSQL and gives the answer
worked out by hand from the example history (``history()``, checked in as
tests/data/sql-docs-preemption.ndjson).

The story (times after 2026-01-01T00:00:00Z; cluster ``lab``; Cohort ``org`` with ClusterQueues
``research`` and ``prod``, 4 GPUs nominal each; ``prod`` has ``withinClusterQueue: LowerPriority``
and ``reclaimWithinCohort: Any``), by Kueue's rules (reference/kueue.md §4):

- 10 s: r1 (4 GPUs) admitted in research (decision 1); 20 s: r2 (4 GPUs) admitted borrowing all of
  prod's 4 (decision 2);
- 30 s: p1 (2 GPUs, priority 100) fits prod's nominal but the cohort is full; research is above its
  quota, so its workloads are reclaimable, newest first: r2 is preempted (decision 3,
  ``InCohortReclamation``: p1's request fits in prod's own quota, Kueue's hierarchical advantage)
  and p1 admitted (decision 4);
- 40 s: p2 (2 GPUs, priority 100) admitted (prod 4 of 4, decision 5);
- 50 s: p3 (2 GPUs, priority 200): prod is full and research within its quota; of prod's lower
  priorities p1 and p2 the newer, p2, is preempted (decision 6, ``InClusterQueue``), p3 admitted (7);
- a Tick at 1 h ends the history (r2 and p2 still pending).
"""

from __future__ import annotations

import re

import sqlalchemy as sa

from replay.sql_sink import replay_to_db
from tests.paths import ROOT
from tests.scenario.builder import GPU, START, Scenario

DOC = ROOT / "docs" / "sql.md"
DATA = ROOT / "tests" / "data" / "sql-docs-preemption.ndjson"
MS = 1000
T0 = int(START.timestamp()) * MS

PROD = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}


def history() -> Scenario:
    """The example history of docs/sql.md "Preemption queries" (see the module docstring)."""
    s = Scenario("lab")
    s.flavor("default", at=0)
    s.cohort("org", at=1)
    s.cq("research", cohort="org", quotas={GPU: "4"}, at=2)
    s.cq("prod", cohort="org", quotas={GPU: "4"}, preemption=PROD, at=3)
    s.lq("research/train", "research", at=4)
    s.lq("prod/serve", "prod", at=5)
    s.submit("research/r1", "train", gpu="4", at=10)
    s.submit("research/r2", "train", gpu="4", at=20)
    s.submit("prod/p1", "serve", gpu="2", priority=100, at=30)
    s.submit("prod/p2", "serve", gpu="2", priority=100, at=40)
    s.submit("prod/p3", "serve", gpu="2", priority=200, at=50)
    s.tick(at=3600)
    return s


def queries() -> dict[str, tuple[str, str]]:
    """``{"P<n>": (title, sql)}`` of the ``### P<n>. Title`` sections of docs/sql.md."""
    text = DOC.read_text()
    found = re.findall(r"^### (P\d+)\. (.+?)\n.*?```sql\n(.*?)```", text, flags=re.S | re.M)
    return {n: (title, sql.strip().rstrip(";")) for n, title, sql in found}


EXPECTED = {
    "P1": [(3, T0 + 30 * MS, "research/r2", "research", "prod/p1", "prod", "InCohortReclamation"),
           (6, T0 + 50 * MS, "prod/p2", "prod", "prod/p3", "prod", "InClusterQueue")],
    "P2": [("prod", "InClusterQueue", 1), ("research", "InCohortReclamation", 1)],
    "P3": [(T0 + 30 * MS, "prod/p1", "prod", "InCohortReclamation",
            "Preempted to accommodate a workload (UID: prod/p1) due to reclamation within the cohort; "
            "preemptor path: /org/prod; preemptee path: /org/research; "
            "preemptor needs nvidia.com/gpu in flavor default: requested 2, available 0")],
    "P4": [("research/r2", 10 * MS), ("prod/p2", 10 * MS)],  # admitted at 20 s / 40 s, preempted 10 s later
}


def test_the_checked_in_history_is_the_documented_story() -> None:
    assert DATA.read_bytes() == history().events_ndjson()


def test_every_preemption_query_gives_the_hand_worked_answer(db: str) -> None:
    assert sorted(queries()) == sorted(EXPECTED)
    replay_to_db(str(DATA), db)
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            for number, (title, sql) in sorted(queries().items()):
                rows = [tuple(row) for row in conn.execute(sa.text(sql))]
                assert rows == EXPECTED[number], f"query {number} ({title})"
    finally:
        engine.dispose()
