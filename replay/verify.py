"""``verify``: recompute decisions and hash chains and compare them with what the SQL store holds.

From the archive (default): each cluster's ``events`` rows in ``position`` order are re-decoded from
their stored ``payload`` and re-fed through the driver (``statemodel.driver``) to a fresh ``Engine``
exactly as they were seen — applied and duplicate rows as events (so duplicates are counted again),
rejected rows as their errors — checking that each step gets its recorded status.  From a SOURCE:
its records (NDJSON lines or a Kafka range, ``replay.sources``) are replayed instead.  Either way every decision produced
is compared, seq by seq and as whole JSON, with the stored ``decisions`` row, and the cluster's hash
chain with every ``snapshots`` row (``state_hash`` after ``position`` events).  The first difference is returned as a ``Divergence``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa

from replay.sources import open_records, position_name
from replay.store.db import SinkError, archived_event, create_db_engine, redacted, salvage
from statemodel import sql_schema as s
from statemodel.driver import Driver, decoded_lines, gc_paused
from statemodel.errors import EventError
from statemodel.events.envelope import Event
from statemodel.version import ENGINE_VERSION

_YIELD = 2000


@dataclass
class Divergence:
    """The first place where recomputation and the store disagree."""

    cluster: str
    where: str
    """e.g. ``decision seq 7 (caused by event e-0012 at position 11)``."""
    expected: str
    recorded: str

    def render(self) -> str:
        return (f"DIVERGENCE in cluster {self.cluster!r} at {self.where}\n"
                f"  expected: {self.expected}\n"
                f"  recorded: {self.recorded}")


@dataclass
class VerifyResult:
    events: int = 0
    decisions: int = 0
    hash: str = ""
    divergence: Divergence | None = None
    clusters: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def summary(self) -> str:
        if self.divergence is not None:
            return self.divergence.render()
        return f"OK: {self.events} events, {self.decisions} decisions, hash {self.hash}"


class _Found(Exception):
    def __init__(self, divergence: Divergence) -> None:
        self.divergence = divergence


def _canon(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


class _Checker:
    """Compares, per cluster, the recomputed decisions and chain values with the stored ones."""

    def __init__(self, db: sa.Engine, stack: ExitStack) -> None:
        self.db = db
        self.stack = stack
        self.driver = Driver()
        self.engine = self.driver.engine
        self.recorded: dict[str, Iterator[Any]] = {}
        self.snapshots: dict[str, dict[int, list[Any]]] = {}
        self.counts: dict[str, int] = {}
        self.events = 0
        self.decisions = 0

    def start_cluster(self, cluster: str) -> None:
        conn = self.stack.enter_context(self.db.connect())
        q = (sa.select(s.decisions.c.seq, s.decisions.c.cause_event_id, s.decisions.c.cause_position,
                       s.decisions.c.payload)
             .where(s.decisions.c.cluster == cluster).order_by(s.decisions.c.seq))
        self.recorded[cluster] = iter(conn.execution_options(yield_per=_YIELD).execute(q))
        snaps: dict[int, list[Any]] = {}
        with self.db.connect() as c2:
            for row in c2.execute(sa.select(s.snapshots.c.id, s.snapshots.c.position, s.snapshots.c.state_hash,
                                            s.snapshots.c.engine_version)
                                  .where(s.snapshots.c.cluster == cluster).order_by(s.snapshots.c.id)):
                snaps.setdefault(row.position, []).append(row)
        self.snapshots[cluster] = snaps
        self.counts[cluster] = 0

    def _chain(self, cluster: str) -> str | None:
        chain = self.engine.chains.get(cluster)
        return None if chain is None else chain.hex()

    def _check_snapshots(self, cluster: str, position: int) -> None:
        for snap in self.snapshots[cluster].get(position, ()):
            got = self._chain(cluster)
            if snap.state_hash != got:
                note = "" if snap.engine_version == ENGINE_VERSION else (
                    f" (recorded by engine {snap.engine_version}, recomputed by engine {ENGINE_VERSION})")
                raise _Found(Divergence(cluster, f"hash after {position} events (snapshot id {snap.id}){note}",
                                        f"hash {got}", f"hash {snap.state_hash}"))

    def feed(self, cluster: str, position: int, label: str, item: Event | EventError, recorded_status: str | None,
             record: bytes | None = None) -> None:
        """One record of ``cluster`` (``item``: the event decoded, or the ``EventError`` that rejects it)
        at ``position`` of the cluster; ``recorded_status`` from the archive."""
        if cluster not in self.counts:
            self.start_cluster(cluster)
        if position != self.counts[cluster]:
            raise _Found(Divergence(cluster, f"event {label}", f"position {self.counts[cluster]}",
                                    f"position {position} (archive has a gap or a reordering)"))
        self.events += 1
        self.counts[cluster] = position + 1
        step = self.driver.step(position, item, record, cluster)
        if step.rejection is not None:
            if recorded_status not in (None, "rejected"):
                raise _Found(Divergence(cluster, f"event {label}", f"rejected: {step.rejection}",
                                        f"{recorded_status}"))
        else:
            status = step.status
            if recorded_status is not None and status != recorded_status:
                raise _Found(Divergence(cluster, f"event {label}", status, recorded_status))
            recorded = self.recorded[cluster]
            for d in step.decisions:
                self.decisions += 1
                exp = d.to_json()
                where = f"decision seq {d.seq} (caused by event {label})"
                row = next(recorded, None)
                if row is None:
                    raise _Found(Divergence(cluster, where, _canon(exp).decode(), "(no such decision)"))
                if row.seq != d.seq or _canon(row.payload) != _canon(exp):
                    if row.seq != d.seq:
                        where = f"decision seq {d.seq} (caused by event {label}; next recorded is seq {row.seq})"
                    raise _Found(Divergence(cluster, where, _canon(exp).decode(), _canon(row.payload).decode()))
        self._check_snapshots(cluster, position + 1)

    def finish(self, cluster: str) -> None:
        """End of ``cluster``'s events: no recorded decision may be left, no snapshot beyond the end."""
        if cluster not in self.counts:
            self.start_cluster(cluster)
        row = next(self.recorded[cluster], None)
        if row is not None:
            raise _Found(Divergence(cluster, f"decision seq {row.seq} (caused by event {row.cause_event_id} "
                                             f"at position {row.cause_position})",
                                    "(no such decision)", _canon(row.payload).decode()))
        n = self.counts[cluster]
        beyond = sorted(p for p in self.snapshots[cluster] if p > n)
        if beyond:
            snap = self.snapshots[cluster][beyond[0]][0]
            raise _Found(Divergence(cluster, f"snapshot id {snap.id}", f"at most {n} events",
                                    f"snapshot after {snap.position} events, hash {snap.state_hash}"))


def _stored_clusters(conn: sa.Connection) -> list[str]:
    names: set[str] = set()
    for table in (s.events, s.decisions, s.snapshots):
        names.update(conn.execute(sa.select(table.c.cluster).distinct()).scalars())
    return sorted(names)


def _from_archive(checker: _Checker, db: sa.Engine, clusters: list[str]) -> None:
    e = s.events.c
    with db.connect() as conn:
        for cluster in clusters:
            checker.start_cluster(cluster)
            q = (sa.select(e.position, e.event_id, e.status, e.payload, e.reason)
                 .where(e.cluster == cluster).order_by(e.position))
            for row in conn.execution_options(yield_per=_YIELD).execute(q):
                label = f"{row.event_id or '-'} at position {row.position}"
                event, error = archived_event(row.payload, row.reason, row.event_id)
                if event is not None and event.cluster != cluster:
                    raise _Found(Divergence(cluster, f"event {label}", f"cluster {cluster!r}",
                                            f"payload of cluster {event.cluster!r}"))
                checker.feed(cluster, row.position, label, error if event is None else event, row.status)
            checker.finish(cluster)


def _from_source(checker: _Checker, source: str, stored: list[str]) -> None:
    positions: dict[str, int] = {}
    unit = position_name(source)
    with open_records(source) as records:
        for where, line, item in decoded_lines(records):
            if isinstance(item, EventError):
                cluster = salvage(line)[0]
                if cluster not in checker.engine.clusters:
                    continue  # archived as a dead letter only (replay.sql_sink "Rejected records")
            else:
                cluster = item.cluster
            pos = positions.get(cluster, 0)
            positions[cluster] = pos + 1
            ident = item.event_id if isinstance(item, EventError) else item.id
            checker.feed(cluster, pos, f"{ident or '-'} at position {pos} ({unit} {where})", item, None, line)
    for cluster in sorted(set(positions) | set(stored)):
        if cluster not in positions:
            raise _Found(Divergence(cluster, "cluster", "(not in SOURCE)", "events stored in the database"))
        checker.finish(cluster)


def verify(url: str, source: str | None = None) -> VerifyResult:
    """Recompute and compare; see the module docstring.

    Raises:
        SinkError: the database cannot be read (unreachable, no schema).
        OSError / EOFError: SOURCE cannot be read.
    """
    db = create_db_engine(url, read_only=True)
    result = VerifyResult()
    try:
        with gc_paused(), ExitStack() as stack:
            checker = _Checker(db, stack)
            try:
                with db.connect() as conn:
                    if not sa.inspect(conn).has_table("events"):
                        raise SinkError(f"{redacted(url)} has no quotaledger schema (run `quotaledger db upgrade`)")
                    stored = _stored_clusters(conn)
                if source is None:
                    _from_archive(checker, db, stored)
                else:
                    _from_source(checker, source, stored)
            except _Found as found:
                result.divergence = found.divergence
            result.events, result.decisions = checker.events, checker.decisions
            result.hash = checker.engine.hash
            result.clusters = sorted(checker.counts)
    except sa.exc.SQLAlchemyError as exc:
        raise SinkError(f"cannot read {redacted(url)}: {str(exc).splitlines()[0]}") from None
    finally:
        db.dispose()
    return result
