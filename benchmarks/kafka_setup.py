"""Shared set-up of the Kafka benchmark scripts (``kafka_ingest.py``, ``kafka_soak.py``): the event
file, the broker, scratch PostgreSQL databases, producing, and the ``quotaledger`` executable.

Not a test helper and not part of the package: scripts in ``benchmarks/`` import it by file name.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from replay.ndjson import iter_lines
from streams import producer
from streams.topics import Topics

PG_ADMIN_URL = os.environ.get("QUOTALEDGER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """``--events``, ``--trace``, ``--until``, ``--bootstrap``, ``--pg-admin``, ``--partitions``, ``--workdir``."""
    parser.add_argument("--events", type=Path, help="event file to use (default: simulate --trace)")
    parser.add_argument("--trace", default="dlrm", help="trace for `quotaledger simulate` (default dlrm)")
    parser.add_argument("--until", help="`quotaledger simulate --until` (default: the whole trace)")
    parser.add_argument("--bootstrap", help="Kafka HOST:PORT (default: start the dev broker)")
    parser.add_argument("--pg-admin", default=PG_ADMIN_URL,
                        help="PostgreSQL URL allowed to CREATE DATABASE (scratch databases are made there)")
    parser.add_argument("--partitions", type=int, default=3, help="partitions of the topics")
    parser.add_argument("--workdir", type=Path, default=Path("benchmarks/out"))


def quotaledger_exe() -> str:
    """The ``quotaledger`` console script of this interpreter's environment."""
    beside = Path(sys.executable).with_name("quotaledger")
    found = str(beside) if beside.exists() else shutil.which("quotaledger")
    if found is None:
        raise SystemExit("cannot find the quotaledger executable (pip install -e . in this environment)")
    return found


def event_file(args: argparse.Namespace) -> Path:
    """``--events``, or the closed-loop simulation of ``--trace`` (cached in ``--workdir``)."""
    if args.events is not None:
        return args.events
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = args.workdir / f"{Path(args.trace).stem}{'-' + args.until if args.until else ''}.ndjson"
    if not path.exists():
        cmd = [quotaledger_exe(), "simulate", "--trace", args.trace, "--out", str(path)]
        if args.until:
            cmd += ["--until", args.until]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return path


@contextmanager
def broker(bootstrap: str | None) -> Iterator[str]:
    """``bootstrap`` as given, else a dev broker (Tansu) for the duration."""
    if bootstrap:
        yield bootstrap
        return
    from streams.devbroker import DevBroker

    with DevBroker() as dev:
        yield dev.bootstrap


@contextmanager
def scratch_databases(admin_url: str, count: int) -> Iterator[list[str]]:
    """``count`` new, empty PostgreSQL databases (URLs), dropped afterwards."""
    if count == 0:
        yield []
        return
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    names = [f"quotaledger_bench_{uuid.uuid4().hex[:10]}" for _ in range(count)]
    try:
        with admin.connect() as conn:
            for name in names:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        base = sa.engine.make_url(admin_url)
        yield [base.set(database=n).render_as_string(hide_password=False) for n in names]
    finally:
        with admin.connect() as conn:
            for name in names:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def produce(path: Path, bootstrap: str, partitions: int) -> tuple[Topics, int]:
    """Produce ``path`` under a fresh topic prefix; ``(topics, records)``."""
    topics = Topics(f"bench{uuid.uuid4().hex[:8]}")
    result = producer.produce(iter_lines(str(path)), bootstrap, topics=topics, partitions=partitions)
    print(f"  {result.summary()}")
    if result.oversized:
        raise SystemExit(f"{len(result.oversized)} lines were too large to produce")
    return topics, result.records
