"""The embedded dev broker really serves Kafka, refuses a busy port, and stops cleanly."""

from __future__ import annotations

import asyncio
import socket

import pytest

from streams.devbroker import DevBroker, DevBrokerError


def test_round_trip_through_the_dev_broker() -> None:
    aiokafka = pytest.importorskip("aiokafka")

    async def round_trip(bootstrap: str) -> list[tuple[bytes, bytes]]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait("devbroker-check", key=b"c1", value=f"m{i}".encode())
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer("devbroker-check", bootstrap_servers=bootstrap,
                                             auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        try:
            got = await consumer.getmany(timeout_ms=5000, max_records=10)
        finally:
            await consumer.stop()
        return [(r.key, r.value) for recs in got.values() for r in recs]

    with DevBroker() as broker:
        assert broker.alive
        assert asyncio.run(round_trip(broker.bootstrap)) == [(b"c1", b"m0"), (b"c1", b"m1"), (b"c1", b"m2")]
    assert not broker.alive


def test_busy_port_is_an_error_not_a_silent_exit() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        broker = DevBroker(port=busy.getsockname()[1])
        with pytest.raises(DevBrokerError, match="exited|not ready"):
            broker.start(timeout=5)
        assert not broker.alive
