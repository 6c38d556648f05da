"""Rows of the SQL archive, built and written one way for both writers of the store: the file
replay (``replay.sql_sink``) and the Kafka ingest worker (``streams.ingest``).  Rows are built
from the driver's step results (``statemodel.driver.StepResult``): the driver applies, the store
records.

- ``ArchiveBatch`` collects the rows of one transaction: ``events`` (applied / duplicate /
  rejected, ``payload`` the received JSON text, ``position`` 0-based per cluster,
  ``source_position`` the NDJSON line or Kafka offset), ``dead_letters``, ``decisions`` (the
  worker's committer adds their ranges as ``outbox`` rows, ``streams.outbox``), ``preemptions`` (one
  row per ``Preempted`` decision, its fields as columns), and restorable ``snapshots``
  (``statemodel.snapshot`` of one cluster, hash-chain value as ``state_hash``).  It decides when a
  periodic snapshot is due: every ``snapshot_every`` events of a cluster (``position`` a multiple
  of it) and, optionally, whenever the cluster's event clock crosses a multiple of
  ``snapshot_every_ms`` — both are functions of the event stream only, so an interrupted and an
  uninterrupted run take the same snapshots.

The projection tables' rows are built in ``replay.store.projections`` and written with the
functions here (``run_writes``).

``events`` and ``decisions`` rows are built as ``TupleRows`` (tuples, times as epoch ms only),
the other tables' as dicts.  On PostgreSQL rows are inserted with ``COPY`` (from 50 rows on); on
SQLite with one statement per table and transaction on the driver connection, storing exactly
what SQLAlchemy Core would (``tests/integration/sql/test_sql_fast_path.py`` compares the two); elsewhere, and for
fewer rows on PostgreSQL, with SQLAlchemy Core ``executemany`` inserts.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa

from replay.store.db import RawJSON, ms_to_datetime
from replay.store.sanitize import key_text, message_text, raw_bytes
from statemodel import sql_schema as s
from statemodel.decisions import PREEMPTED
from statemodel.driver import APPLIED, DUPLICATE, StepResult, gc_paused
from statemodel.engine import Engine
from statemodel.errors import EventError
from statemodel.snapshot import dump as dump_snapshot
from statemodel.version import ENGINE_VERSION

STATE_ENCODING = "engine-snapshot-v1"
"""``snapshots.state_encoding`` of the blobs written here: ``statemodel.snapshot.dump`` of the one
cluster (zlib-compressed canonical JSON an engine is restored from)."""

DEFAULT_SNAPSHOT_EVERY = 50_000
"""Events of one cluster between two periodic snapshots."""

_COPY_MIN_ROWS = 50

EVENT_COLUMNS = ("cluster", "position", "source_position", "event_id", "event_time_ms", "type", "payload", "status",
                 "reason", "field_path")
"""The columns of ``ArchiveBatch``'s ``events`` tuples (``event_time`` follows from ``event_time_ms``)."""

EVENT_COLUMNS_NO_PAYLOAD = tuple(c for c in EVENT_COLUMNS if c != "payload")

DECISION_COLUMNS = ("cluster", "seq", "cause_event_id", "cause_position", "decision_time_ms", "type", "workload",
                    "cluster_queue", "payload")
"""The columns of ``ArchiveBatch``'s ``decisions`` tuples (``decision_time`` follows from ``decision_time_ms``)."""

PREEMPTION_COLUMNS = ("cluster", "seq", "cause_position", "preempted_at_ms", "victim", "victim_cluster_queue",
                      "preemptor", "preemptor_cluster_queue", "reason", "message")
"""The columns of ``ArchiveBatch``'s ``preemptions`` tuples (``preempted_at`` follows from ``preempted_at_ms``)."""


@dataclass(frozen=True, slots=True)
class TupleRows:
    """Rows of one table as sequences (tuples, or lists after ``streams.batch_codec``) of
    ``columns``, the form the archive's hot tables are built in.

    Values are JSON scalars; a JSON column's value is its JSON text as a ``str`` (stored verbatim;
    never a JSON-ready value, so no ``RawJSON`` mark is needed).  Rows
    without a value use ``columns`` without that column.  The table's ``DateTime`` columns are not
    in ``columns``: each is written from its epoch-milliseconds companion ``<name>_ms`` (UTC), so a
    row is built without a datetime object.
    """

    columns: tuple[str, ...]
    rows: list[Sequence]

    def __len__(self) -> int:
        return len(self.rows)

    def dicts(self, table: sa.Table) -> list[dict]:
        """The rows as dicts for SQLAlchemy Core: the ``DateTime`` columns filled in, JSON texts as
        ``RawJSON`` (which Core stores verbatim)."""
        times = _derived_times(table, self.columns)
        texts = [c for c in self.columns if isinstance(table.c[c].type, sa.JSON)]
        out = []
        for row in self.rows:
            d = dict(zip(self.columns, row))
            for name, at in times:
                d[name] = ms_to_datetime(row[at])
            for name in texts:
                if d[name] is not None:
                    d[name] = RawJSON(d[name])
            out.append(d)
        return out


def _derived_times(table: sa.Table, columns: tuple[str, ...]) -> list[tuple[str, int]]:
    """``(DateTime column, index of its *_ms companion in columns)`` for ``table``'s DateTime columns."""
    return [(c.name, columns.index(f"{c.name}_ms")) for c in table.columns
            if isinstance(c.type, sa.DateTime) and c.name not in columns]


def insert_rows(conn: sa.Connection, table: sa.Table, rows: list[dict] | TupleRows) -> None:
    """Insert ``rows`` (dicts keyed by column name, or ``TupleRows``) into ``table``: ``COPY`` on
    PostgreSQL for 50 rows or more, one statement of the driver on SQLite (``_insert_sqlite`` /
    ``_insert_sqlite_tuples``), SQLAlchemy Core ``executemany`` otherwise.  JSON values of dict rows
    may be ``RawJSON`` text or JSON-ready values; ``TupleRows`` hold JSON text."""
    if not rows:
        return
    dialect = conn.dialect.name
    if dialect == "sqlite":
        if isinstance(rows, TupleRows):
            _insert_sqlite_tuples(conn, table, rows)
        else:
            _insert_sqlite(conn, table, rows)
        return
    if dialect != "postgresql" or len(rows) < _COPY_MIN_ROWS:
        conn.execute(table.insert(), rows.dicts(table) if isinstance(rows, TupleRows) else rows)
        return
    if isinstance(rows, TupleRows):
        times = _derived_times(table, rows.columns)
        names = [*rows.columns, *(name for name, _ in times)]
        derived = _DerivedTimes()
        if len(times) == 1:
            at = times[0][1]
            values_of: Iterable[Sequence] = ((*row, derived[row[at]]) for row in rows.rows)
        else:
            values_of = ((*row, *(derived[row[at]] for _, at in times)) for row in rows.rows)
    else:
        columns = [c for c in table.columns if c is not table.autoincrement_column]
        names = [c.name for c in columns]
        json_at = [i for i, c in enumerate(columns) if isinstance(c.type, sa.JSON)]
        values_of = (_copy_values(row, names, json_at) for row in rows)
    listed = ", ".join(f'"{c}"' for c in names)
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        with cursor.copy(f'COPY "{table.name}" ({listed}) FROM STDIN') as copy:
            write = copy.write_row
            for values in values_of:
                write(values)
    finally:
        cursor.close()


def _copy_values(row: dict, names: list[str], json_at: list[int]) -> list:
    values = [row.get(c) for c in names]
    for i in json_at:
        v = values[i]
        if v is not None and type(v) is not RawJSON:
            values[i] = orjson.dumps(v).decode()
    return values


class _DerivedTimes(dict):
    """Epoch ms → what a ``DateTime`` column is given for that UTC instant: ``process`` applied to
    ``ms_to_datetime`` (the datetime itself for ``COPY``; SQLAlchemy's own bind processor, i.e. the
    stored text, for SQLite), memoized: a batch repeats its timestamps (an event's decisions share
    its time)."""

    LIMIT = 1 << 17

    def __init__(self, process: Callable[[Any], Any] | None = None) -> None:
        super().__init__()
        self.process = process

    def __missing__(self, ms: int | None) -> Any:
        if len(self) >= self.LIMIT:
            self.clear()
        value = ms_to_datetime(ms)
        value = self[ms] = value if self.process is None else self.process(value)
        return value


@functools.lru_cache(maxsize=64)
def _sqlite_tuple_plan(dialect: sa.Dialect, table: sa.Table, columns: tuple[str, ...]
                       ) -> tuple[str, str, list[int], _DerivedTimes | None]:
    """The statements for ``TupleRows`` of these columns (their ``DateTime`` columns appended): a
    ``json_each`` insert of the rows as they are, which derives each ``DateTime`` text from its
    ``*_ms`` value in SQL (``_sqlite_time_sql``), and a plain insert whose parameters carry that text;
    the indexes of the ``*_ms`` values, and the converter the plain insert's parameters use."""
    times = _derived_times(table, columns)
    names = [*columns, *(name for name, _ in times)]
    quote = dialect.identifier_preparer.quote
    plain = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in names)}) "
             f"VALUES ({', '.join('?' * len(names))})")
    values = [f"json_extract(value, '$[{i}]')" for i in range(len(columns))]
    values += [_sqlite_time_sql(f"json_extract(value, '$[{at}]')") for _, at in times]
    json_sql = _json_each_insert(dialect, table, names, values)
    convert = _DerivedTimes(table.c[times[0][0]].type._cached_bind_processor(dialect)) if times else None
    return json_sql, plain, [at for _, at in times], convert


def _sqlite_time_sql(ms: str) -> str:
    """SQL for the text SQLAlchemy's SQLite ``DateTime`` stores (``YYYY-MM-DD HH:MM:SS.ffffff``, UTC)
    of the epoch-milliseconds integer ``ms`` (NULL stays NULL): whole seconds rounded down, so
    instants before 1970 keep a fraction in 0..999 ms.  Computed by SQLite itself, so the writer
    thread spends no GIL-holding time on it; ``tests/integration/sql/test_sql_fast_path.py`` compares the result
    with SQLAlchemy's own text over the engine's whole time range."""
    frac = f"((({ms}) % 1000) + 1000) % 1000"
    return (f"strftime('%Y-%m-%d %H:%M:%S', (({ms}) - {frac}) / 1000, 'unixepoch') "
            f"|| printf('.%03d000', {frac})")


def _json_each_insert(dialect: sa.Dialect, table: sa.Table, names: Sequence[str],
                      values: Sequence[str] | None = None) -> str:
    """An insert of the rows of a JSON array of arrays into the columns ``names``: each column's SQL
    expression from ``values`` (over the row ``value``), by default the row's element at the
    column's own index."""
    quote = dialect.identifier_preparer.quote
    if values is None:
        values = [f"json_extract(value, '$[{i}]')" for i in range(len(names))]
    return (f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in names)}) "
            f"SELECT {', '.join(values)} FROM json_each(?)")


_NOT_IN_JSON = (sa.Numeric, sa.LargeBinary)
"""Column types whose bound values (floats, bytes) a JSON document would not carry exactly."""


def _insert_sqlite_tuples(conn: sa.Connection, table: sa.Table, rows: TupleRows) -> None:
    """``TupleRows`` in ``conn``'s transaction as ONE statement of the driver connection: the rows go
    to SQLite as one JSON array of arrays (as text: SQLite 3.45+ would read a BLOB as JSONB),
    inserted by ``INSERT ... SELECT json_extract(value, '$[i]') ... FROM json_each(?)``, which also
    derives each ``DateTime`` column's text from its ``*_ms`` value.  The values arrive as they
    would be bound (text, integers, NULL; these rows hold no floats or blobs), and SQLite inserts
    the whole batch in one call, which runs without the GIL (an ``executemany`` takes the GIL back
    for every row and, next to a busy thread, waits for it each time).  A batch with a NUL in some
    text goes in with ``executemany``, each ``DateTime`` text computed in Python (``_DerivedTimes``)."""
    json_sql, sql, time_at, convert = _sqlite_tuple_plan(conn.dialect, table, rows.columns)
    doc = _json_document(rows.rows)
    if doc is not None:
        _execute(conn, json_sql, [(doc,)])
        return
    if convert is None:
        params: list = rows.rows
    elif len(time_at) == 1:
        at = time_at[0]
        params = [(*row, convert[row[at]]) for row in rows.rows]
    else:
        params = [(*row, *(convert[row[at]] for at in time_at)) for row in rows.rows]
    _execute(conn, sql, params)


def _json_document(params: list) -> str | None:
    """``params`` as the JSON text a ``json_each`` insert reads, or ``None`` when that would not carry
    them exactly: a text holds a NUL (SQLite's JSON functions cut text there), or orjson refuses a
    value."""
    try:
        doc = orjson.dumps(params).decode()
    except orjson.JSONEncodeError:
        return None
    return None if "\\u0000" in doc else doc


def _execute_as_json(conn: sa.Connection, json_sql: str, sql: str, params: list) -> None:
    """``params`` through the ``json_each`` insert ``json_sql``, or, when ``_json_document`` cannot
    carry them, through ``executemany`` of ``sql``."""
    doc = _json_document(params)
    if doc is None:
        _execute(conn, sql, params)
    else:
        _execute(conn, json_sql, [(doc,)])


@functools.lru_cache(maxsize=256)
def _sqlite_plan(dialect: sa.Dialect, table: sa.Table, keys: tuple[str, ...]
                 ) -> tuple[str | None, str, Callable[[dict], tuple], list[tuple[int, Callable[[Any], Any]]]]:
    """How to insert rows with these keys: a ``json_each`` insert of them (``None`` when a column
    holds floats or bytes), the statement SQLAlchemy compiles for them, a getter of its parameters
    in order, and the column type's own bind processor for each parameter that has one (DateTime
    ones memoized per distinct value: a batch repeats its timestamps)."""
    compiled = table.insert().compile(dialect=dialect, column_keys=list(keys))
    names = compiled.positiontup or []
    in_json = not any(isinstance(table.c[name].type, _NOT_IN_JSON) for name in names)
    processors = []
    for i, name in enumerate(names):
        column_type = table.c[name].type
        process = column_type._cached_bind_processor(dialect)
        if process is not None:
            if isinstance(column_type, sa.DateTime):
                process = functools.lru_cache(maxsize=65_536)(process)
            processors.append((i, process))
    getter = operator.itemgetter(*names) if len(names) > 1 else (lambda row: (row[names[0]],))
    return _json_each_insert(dialect, table, names) if in_json else None, str(compiled), getter, processors


def _insert_sqlite(conn: sa.Connection, table: sa.Table, rows: list[dict]) -> None:
    """``rows`` in the sqlite3 connection that ``conn``'s transaction holds, with exactly the
    parameters SQLAlchemy Core would bind (the keys of the first row, as Core takes them; every
    value through its column type's bind processor), but without Core's per-row parameter
    machinery: as one ``json_each`` statement (see ``_insert_sqlite_tuples``), or, when a column
    holds floats or bytes (or a text a NUL), one ``executemany``.  Errors of the driver are raised as SQLAlchemy's
    ``DBAPIError`` subclasses."""
    json_sql, sql, getter, processors = _sqlite_plan(conn.dialect, table, tuple(rows[0]))
    if processors:
        params: list = []
        append = params.append
        for row in rows:
            values = list(getter(row))
            for i, process in processors:
                values[i] = process(values[i])
            append(values)
    else:
        params = [getter(row) for row in rows]
    if json_sql is None:
        _execute(conn, sql, params)
    else:
        _execute_as_json(conn, json_sql, sql, params)


def _execute(conn: sa.Connection, sql: str, params: list) -> None:
    """``executemany`` on the driver connection of ``conn``'s transaction; the driver's errors are
    raised as Core raises them (``sa.exc.IntegrityError``, ``OperationalError``, ...)."""
    dbapi_error = conn.dialect.loaded_dbapi.Error
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.executemany(sql, params)
    except dbapi_error as exc:
        raise sa.exc.DBAPIError.instance(sql, None, exc, dbapi_error) from exc
    finally:
        cursor.close()


def delete_keys(conn: sa.Connection, table: sa.Table, keys: list[tuple]) -> None:
    """Delete the rows of ``table`` with these primary keys (tuples of the key columns, all strings):
    on PostgreSQL as one semi-join against ``unnest`` of one array per key column (a hash join, where
    a long row-value ``IN`` list is compared row by row), elsewhere with row-value ``IN`` lists."""
    if not keys:
        return
    pk = list(table.primary_key.columns)
    if conn.dialect.name == "postgresql":
        names = ", ".join(f'"{c.name}"' for c in pk)
        arrays = ", ".join(f"CAST(:k{i} AS TEXT[])" for i in range(len(pk)))
        conn.execute(sa.text(f'DELETE FROM "{table.name}" WHERE ({names}) IN (SELECT * FROM unnest({arrays}))'),
                     {f"k{i}": list(column) for i, column in enumerate(zip(*keys))})
        return
    for i in range(0, len(keys), 500):
        conn.execute(table.delete().where(sa.tuple_(*pk).in_(keys[i:i + 500])))


class ArchiveBatch:
    """The archive rows of one transaction; see the module docstring.

    ``source`` names where records come from in ``dead_letters.source`` (a file path; the worker
    passes it per record).  ``last_snapshot`` maps a cluster to the position of its newest snapshot (kept
    across batches, so a shutdown snapshot is skipped when one was just taken).
    """

    def __init__(self, *, snapshot_every: int = DEFAULT_SNAPSHOT_EVERY, snapshot_every_ms: int | None = None) -> None:
        self.snapshot_every = snapshot_every
        self.snapshot_every_ms = snapshot_every_ms
        self.events: list[tuple] = []
        """``EVENT_COLUMNS`` tuples"""
        self.events_no_payload: list[tuple] = []
        """``EVENT_COLUMNS`` tuples without ``payload`` (rejected records that were no JSON object, or whose text is not stored: ``replay.store.sanitize.payload_text``)"""
        self.decisions: list[tuple] = []
        """``DECISION_COLUMNS`` tuples"""
        self.preemptions: list[tuple] = []
        """``PREEMPTION_COLUMNS`` tuples"""
        self.dead: list[dict] = []
        self.snapshots: list[dict] = []
        self.last_snapshot: dict[str, int] = {}

    def __len__(self) -> int:
        return (len(self.events) + len(self.events_no_payload) + len(self.decisions) + len(self.preemptions)
                + len(self.dead) + len(self.snapshots))

    def add_rejected(self, position: int | None, line: bytes, err: EventError,
                     salvaged: tuple[str | None, RawJSON | None, int | None, str | None], source: str,
                     source_position: int) -> None:
        """A record that failed validation (``line``: its bytes as received).

        Always a ``dead_letters`` row with the exact bytes (of a record over the event size limit,
        its first ones: ``replay.store.sanitize.raw_bytes``), reason and field path.  When the record
        joins a cluster's stream — ``position`` is given: the cluster it names (``salvaged[0]``) has
        state — also an ``events`` row (status ``rejected``) at ``position`` of that cluster, and the
        dead letter names the cluster and position.  Otherwise nothing of the record is keyed by a
        cluster.  Ids, types, reasons and field paths are stored through
        ``replay.store.sanitize`` (NUL-free, bounded), so both stores hold the same values and no
        index receives a record's unbounded text.  ``salvaged`` is
        ``replay.store.db.salvage(line, ...)``: ``(cluster, payload, time_ms, type)``.
        """
        cluster, payload, when, etype = salvaged
        reason, path = message_text(err.problem), message_text(err.path or None)
        if position is None:
            cluster = None
        else:
            head = (cluster, position, source_position, key_text(err.event_id), when, etype)
            tail = ("rejected", reason, path)
            if payload is None:
                self.events_no_payload.append(head + tail)
            else:
                self.events.append((*head, payload, *tail))
        self.dead.append({"cluster": cluster, "source": source, "source_position": source_position,
                          "raw": raw_bytes(line), "reason": reason, "field_path": path,
                          "received_position": position})

    def add_step(self, step: StepResult, position: int) -> bool:
        """Queue the ``events`` row of an applied or duplicate step (``statemodel.driver.StepResult``)
        at ``position`` of its cluster and the ``decisions`` (and ``preemptions``) rows of its decisions.  Pure: the step
        already holds everything the rows need (``payload`` is ``step.record``, the event's
        canonical JSON when the step has no bytes).

        Returns:
            whether a periodic snapshot of the cluster is due after this step (every
            ``snapshot_every`` events, or its clock crossed a multiple of ``snapshot_every_ms``): the
            caller then adds it with ``add_snapshot`` at ``position + 1``.
        """
        event = step.event
        assert event is not None, "a rejected record is added with add_rejected"
        cluster = event.cluster
        record = step.record if step.record is not None else event.canonical
        self.events.append((cluster, position, step.position, event.id, event.time_ms, event.type,
                            record.strip().decode(), DUPLICATE if step.duplicate else APPLIED, None, None))
        if step.decisions:
            decisions = self.decisions
            for d in step.decisions:
                decisions.append((cluster, d.seq, d.cause, position, d.time_ms, d.kind, d.workload, d.cluster_queue,
                                  orjson.dumps(d.to_json()).decode()))
                if d.kind == PREEMPTED:
                    self.preemptions.append((cluster, d.seq, position, d.time_ms, d.workload, d.cluster_queue,
                                             d.preemptor, d.preemptor_cluster_queue, d.reason, d.message))
        every_ms = self.snapshot_every_ms
        before, after = step.clock_before_ms, step.clock_ms
        return (position + 1) % self.snapshot_every == 0 or (
            every_ms is not None and before is not None and after is not None and after // every_ms != before // every_ms)

    def add_snapshot(self, engine: Engine, cluster: str, position: int, source_position: int | None) -> None:
        """Queue a restorable snapshot of ``cluster`` after ``position`` of its events (written with the
        current batch, so it never refers to events that are not stored)."""
        state = engine.clusters[cluster]
        with gc_paused():  # dumping allocates a whole state's objects; the cyclic GC would triple the time
            blob = dump_snapshot(engine, [cluster])
        self.snapshots.append({
            "cluster": cluster, "position": position, "event_time": ms_to_datetime(state.clock_ms),
            "event_time_ms": state.clock_ms, "decision_seq": state.seq, "engine_version": ENGINE_VERSION,
            "state_hash": engine.chains[cluster].hex(), "state_encoding": STATE_ENCODING,
            "state": blob, "created_position": source_position})
        self.last_snapshot[cluster] = position

    def take(self) -> Writes:
        """The queued rows as writes for ``run_writes`` (the batch is empty afterwards)."""
        writes: Writes = [("insert", table, rows) for table, rows in (
            (s.events, TupleRows(EVENT_COLUMNS, self.events)),
            (s.events, TupleRows(EVENT_COLUMNS_NO_PAYLOAD, self.events_no_payload)),
            (s.decisions, TupleRows(DECISION_COLUMNS, self.decisions)),
            (s.preemptions, TupleRows(PREEMPTION_COLUMNS, self.preemptions)),
            (s.dead_letters, self.dead), (s.snapshots, self.snapshots)) if rows]
        self.events, self.events_no_payload, self.decisions, self.preemptions = [], [], [], []
        self.dead, self.snapshots = [], []
        return writes


Writes = list[tuple[str, sa.Table, list | TupleRows]]
"""SQL work computed ahead of its transaction: ``("insert", table, rows)`` (rows: dicts or
``TupleRows``), ``("delete_keys", table, primary keys)`` or ``("delete_cluster", table, [cluster])``;
see ``run_writes``."""


def writes_by_name(writes: Writes) -> list[tuple[str, str, list]]:
    """``writes`` with table names instead of ``sa.Table`` objects (picklable, for another process);
    ``writes_from_names`` turns them back."""
    return [(op, str(table.name), items) for op, table, items in writes]


def writes_from_names(named: list[tuple[str, str, list]]) -> Writes:
    """The ``Writes`` of ``writes_by_name`` output (tables looked up in ``statemodel.sql_schema``).

    Raises:
        KeyError: a name is not a table of the schema.
    """
    return [(op, s.metadata.tables[name], items) for op, name, items in named]


def run_writes(conn: sa.Connection, writes: Writes) -> None:
    """Execute ``writes`` in order in ``conn``'s transaction."""
    for op, table, items in writes:
        if op == "insert":
            insert_rows(conn, table, items)
        elif op == "delete_keys":
            delete_keys(conn, table, items)
        else:
            conn.execute(table.delete().where(table.c.cluster == items[0]))
