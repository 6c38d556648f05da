"""Helpers of the ingest worker tests: feed a topic with aiokafka, read a topic back, an extra
PostgreSQL database, the SQL content to compare, and the trace slice's events."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from replay.sim.importers.dlrm import import_dlrm
from replay.sim.quota_tree import generate_quota
from replay.sim.simulator import simulate
from statemodel import sql_schema as s
from statemodel.timefmt import parse_duration
from tests.paths import DATA


ON_POSTGRESQL = pytest.mark.parametrize("db", ["postgresql"], indirect=True)
"""Run a test on the real PostgreSQL only (conftest's ``db`` fixture, one of its two kinds)."""

Record = tuple[bytes | None, bytes | None]
"""``(key, value)`` of a record to produce."""


def trace_events(path: Path, tick: str = "1h") -> list[bytes]:
    """The closed-loop simulation of ``tests/data/dlrm_slice.csv`` (a real trace slice) as NDJSON
    lines, written to ``path`` too (for ``replay``)."""
    trace = import_dlrm(DATA / "dlrm_slice.csv")
    simulate(trace, generate_quota(trace), path, tick_ms=parse_duration(tick, "tick"))
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def keyed(lines: list[bytes]) -> list[Record]:
    """NDJSON lines as records keyed by their cluster, as producers are asked to key them."""
    return [(orjson.loads(line).get("cluster", "default").encode(), line) for line in lines]


def produce(bootstrap: str, topic: str, records: list[Record]) -> None:
    """Send ``records`` in order (per key order is kept) and wait for every acknowledgement."""

    async def main() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False, linger_ms=10,
                                    max_request_size=4_000_000)
        await producer.start()
        try:
            sent = [await producer.send(topic, key=key, value=value) for key, value in records]
            await asyncio.gather(*sent)
        finally:
            await producer.stop()

    asyncio.run(main())


def wait_for_group(bootstrap: str, group: str, members: int, timeout: float = 30.0) -> None:
    """Wait until consumer ``group`` is stable with ``members`` members.

    Raises:
        TimeoutError: not within ``timeout`` seconds.
    """

    async def main() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while loop.time() < deadline:
                for response in await admin.describe_consumer_groups([group]):
                    for _, _, state, _, _, found in (g[:6] for g in response.groups):
                        if state == "Stable" and len(found) == members:
                            return
                await asyncio.sleep(0.2)
            raise TimeoutError(f"consumer group {group} did not become stable with {members} members")
        finally:
            await admin.close()

    asyncio.run(main())


def read_topic(bootstrap: str, topic: str, expected: int, timeout: float = 20.0) -> list:
    """Every record of ``topic`` from the beginning, once ``expected`` have been read or after ``timeout``."""

    async def main() -> list:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    auto_offset_reset="earliest", fetch_max_wait_ms=100)
        await consumer.start()
        try:
            parts = consumer.partitions_for_topic(topic) or set()
            if not parts:
                await consumer.topics()
                parts = consumer.partitions_for_topic(topic) or set()
            consumer.assign([TopicPartition(topic, p) for p in parts])
            out: list = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while len(out) < expected and loop.time() < deadline:
                for recs in (await consumer.getmany(timeout_ms=200)).values():
                    out.extend(recs)
            return out
        finally:
            await consumer.stop()

    return asyncio.run(main())


def rows(url: str, table: sa.Table, *where, drop: tuple[str, ...] = ()) -> list[dict]:
    """Rows of ``table`` as dicts (without the ``drop`` columns), in primary-key order."""
    eng = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with eng.connect() as conn:
            result = conn.execute(sa.select(table).where(*where).order_by(*table.primary_key.columns))
            return [{k: v for k, v in r._mapping.items() if k not in drop} for r in result]
    finally:
        eng.dispose()


STORED = (s.events, s.decisions, s.cohorts, s.cluster_queues, s.local_queues, s.quotas, s.workloads, s.fair_sharing)
"""The tables whose content must not depend on how the events reached the store."""


def store_content(url: str, drop_source: bool) -> dict[str, list[dict]]:
    """The content of ``STORED`` (``events.source_position`` dropped when ``drop_source``: a line
    number in a file replay, an offset in Kafka) and the snapshots' ``(cluster, position, hash)``."""
    out = {t.name: rows(url, t, drop=("source_position",) if drop_source and t is s.events else ())
           for t in STORED}
    out["snapshots"] = sorted((r["cluster"], r["position"], r["state_hash"])
                              for r in rows(url, s.snapshots, drop=("state", "created_position")))
    return out


def assert_outbox_published_every_decision(url: str) -> None:
    """The ``outbox`` ranges cover every stored decision exactly once, and all are published."""
    covered = sorted((r["cluster"], seq) for r in rows(url, s.outbox)
                     for seq in range(r["first_seq"], r["last_seq"] + 1))
    assert covered == sorted((r["cluster"], r["seq"]) for r in rows(url, s.decisions))
    assert all(r["published"] for r in rows(url, s.outbox))
