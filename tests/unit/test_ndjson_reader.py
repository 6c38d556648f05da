"""The NDJSON reader never holds a line longer than an event may be (docs/events.md "Limits": 4 MiB).

Such a line is read at most 4 MiB + 1 bytes at a time, the rest skipped in chunks up to the next
newline; it is rejected as too large, naming its size and the limit, its first 64 KiB are what a
dead letter keeps, and the run carries on with the next line.  Expected values follow from those
rules: the sizes are the byte counts of the lines written, not counting their line breaks.
"""

from __future__ import annotations

import gzip
import io
import tracemalloc
from pathlib import Path

import sqlalchemy as sa

from replay.ndjson import bounded_lines, iter_lines, lines_of
from replay.runner import run_file
from replay.sql_sink import replay_to_db
from replay.store.db import create_db_engine
from replay.store.sanitize import OVERSIZED_RAW_BYTES
from statemodel import sql_schema as s
from statemodel.events.oversized import OversizedRecord
from statemodel.limits import MAX_EVENT_BYTES
from tests.paths import EXAMPLE

CLEAN = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]


def _read(data: bytes, limit: int) -> list[tuple[int, bytes, int | None]]:
    stream = io.BufferedReader(io.BytesIO(data), 4)  # a small buffer: lines cross many reads
    return [(n, bytes(line), getattr(line, "size", None))
            for n, line in lines_of(bounded_lines(stream, limit))]  # type: ignore[arg-type]


def test_a_line_over_the_limit_is_cut_to_its_first_bytes_and_sized() -> None:
    data = b"0123456789\n" + b"x" * 11 + b"\n" + b"y" * 5000 + b"\r\n" + b"z" * 3 + b"\n" + b"w" * 12
    assert _read(data, 10) == [(1, b"0123456789", None),  # exactly the limit: read whole
                               (2, b"x" * 11, 11),  # one byte over
                               (3, b"y" * 11, 5000),  # of what was read (limit + 1 bytes), at most 64 KiB kept
                               (4, b"zzz", None),
                               (5, b"w" * 11, 12)]  # the last line, without a newline


def test_the_size_is_the_decoders_line_breaks_and_blank_lines_as_when_read_whole() -> None:
    # the first 11 bytes end with line break characters only: stripped, the line is within the limit
    data = b"abcdefgh\r\r\r\r\r\r\r\n" + b" " * 30 + b"\n" + b"ab\rcdefghijk\r\r\n" + b"next\n"
    assert _read(data, 10) == [(1, b"abcdefgh", None),  # 8 bytes once its trailing \r\n run is stripped
                               (3, b"ab\rcdefghij", 12),  # a \r inside a line counts; its trailing ones do not
                               (4, b"next", None)]  # line 2, only spaces, is blank and skipped


def test_the_kept_prefix_is_bounded() -> None:
    size = OVERSIZED_RAW_BYTES * 3
    ((n, line, got),) = _read(b"q" * size + b"\n", OVERSIZED_RAW_BYTES * 2)
    assert (n, line, got) == (1, b"q" * OVERSIZED_RAW_BYTES, size)


def test_reading_a_huge_line_holds_about_the_limit_not_the_line(tmp_path: Path) -> None:
    path = tmp_path / "huge.ndjson"
    huge = b'{"id":"huge","pad":"' + b"p" * (40 * 2**20) + b'"}'
    path.write_bytes(CLEAN[0] + b"\n" + huge + b"\n" + CLEAN[1] + b"\n")
    tracemalloc.start()
    try:
        got = [(n, type(line), len(line), getattr(line, "size", None)) for n, line in iter_lines(str(path))]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == [(1, bytes, len(CLEAN[0]), None), (2, OversizedRecord, OVERSIZED_RAW_BYTES, len(huge)),
                   (3, bytes, len(CLEAN[1]), None)]
    assert peak < 3 * MAX_EVENT_BYTES  # a 4 MiB read, a 1 MiB skip chunk and the buffers; the line is 40 MiB


def test_gzip_sources_are_bounded_too(tmp_path: Path) -> None:
    path = tmp_path / "huge.ndjson.gz"
    huge = b"[" * (MAX_EVENT_BYTES + 10)
    path.write_bytes(gzip.compress(huge + b"\n" + CLEAN[0] + b"\n"))
    got = list(iter_lines(str(path)))
    assert [(n, type(line), getattr(line, "size", None)) for n, line in got] == [
        (1, OversizedRecord, MAX_EVENT_BYTES + 10), (2, bytes, None)]


def test_replay_rejects_the_line_naming_the_limit_and_carries_on(tmp_path: Path) -> None:
    path = tmp_path / "history.ndjson"
    huge = b'{"id":"huge","cluster":"ml-east","type":"Tick","pad":"' + b"p" * MAX_EVENT_BYTES + b'"}'
    path.write_bytes(b"\n".join([*CLEAN[:3], huge, *CLEAN[3:]]) + b"\n")
    rejected = []
    engine, result = run_file(str(path), on_reject=lambda pos, err: rejected.append((pos, err.path, err.problem)))
    assert rejected == [(4, "", f"event too large: {len(huge)} bytes, at most {MAX_EVENT_BYTES}")]
    assert (result.applied, result.rejected) == (len(CLEAN), 1)
    clean = tmp_path / "clean.ndjson"
    clean.write_bytes(b"\n".join(CLEAN) + b"\n")
    assert engine.hash == run_file(str(clean))[0].hash

    url = f"sqlite:///{tmp_path / 'store.db'}"
    replay_to_db(str(path), url)
    db = create_db_engine(url)
    try:
        with db.connect() as conn:
            d, e = s.dead_letters.c, s.events.c
            assert [tuple(r) for r in conn.execute(sa.select(d.source_position, d.raw, d.reason, d.cluster))] == [
                (4, huge[:OVERSIZED_RAW_BYTES], f"event too large: {len(huge)} bytes, at most {MAX_EVENT_BYTES}",
                 None)]
            # nothing is read from an unread line: the cluster it names is the file's default, "default", which
            # has no state, so it joins no cluster's stream
            assert [tuple(r) for r in conn.execute(sa.select(e.source_position, e.event_id, e.type, e.payload)
                                                   .where(e.status == "rejected"))] == []
    finally:
        db.dispose()
