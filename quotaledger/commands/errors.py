"""The one place that turns a failure into an exit code and a one-line message.

Every command runs through ``guarded``: an exception listed in ``_exit_codes`` is printed on
stderr as ``error: MESSAGE`` (one line) and ends the command with its exit code; anything else
propagates (a bug shows its traceback).  The codes:

- 0: success (``replay`` with rejected events too: they are counted, never fatal);
- 1: the command could not do its work: an unreadable input or unwritable output, a database
  error (``SinkError``, ``SnapshotError``, SQLAlchemy, Alembic), an unknown workload or cluster,
  a Kafka failure (``SourceError``, ``ProduceError``, ``TopicAdminError``, ``IngestError``,
  ``DevBrokerError``), a trace that cannot be imported (``DemoError``);
- 2: a bad request: an invalid time or duration option (``TimeSpecError``, ``EventError``), a bad
  what-if patch (``WhatIfError``), a missing argument, options that exclude each other; ``ingest``: the broker was reset under the stored offsets
  (``BrokerResetError``);
- ``verify`` exits 1 for a divergence, so every failure of it exits 2 (``failure_code``).

Commands raise ``CommandError`` for their own checks and name what they read or write with
``reading`` / ``writing``, so ``OSError`` messages say which file or URL failed.  The exception
types are imported when a failure happens, not at start-up (``--help`` stays fast).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer

F = TypeVar("F", bound=Callable[..., Any])


class CommandError(Exception):
    """A failure a command detects itself: printed as ``error: MESSAGE``, exit code ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@contextmanager
def reading(what: str) -> Iterator[None]:
    """Inside the block, ``OSError`` / ``EOFError`` (including a Kafka ``SourceError``) become
    ``CommandError("cannot read WHAT: ...")``, exit 1."""
    try:
        yield
    except (OSError, EOFError) as exc:
        raise CommandError(f"cannot read {what}: {exc}") from exc


@contextmanager
def writing(what: str) -> Iterator[None]:
    """Inside the block, ``OSError`` becomes ``CommandError("cannot write WHAT: ...")``, exit 1."""
    try:
        yield
    except OSError as exc:
        raise CommandError(f"cannot write {what}: {exc}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def _exit_codes() -> list[tuple[tuple[type[BaseException], ...], int, Callable[[BaseException], str]]]:
    """``(exception types, exit code, message)`` in match order (the first entry whose types
    match wins)."""
    from alembic.util.exc import CommandError as AlembicError
    from sqlalchemy.exc import SQLAlchemyError

    from replay.demo import DemoError
    from replay.sources import SourceError
    from replay.store.db import SinkError
    from replay.timespec import TimeSpecError
    from replay.whatif import WhatIfError
    from statemodel.errors import EventError
    from statemodel.snapshot import SnapshotError
    from streams.admin import TopicAdminError
    from streams.devbroker import DevBrokerError
    from streams.ingest import IngestError
    from streams.log_check import BrokerResetError
    from streams.producer import ProduceError

    return [
        ((CommandError,), 1, str),  # its own code: see exit_for
        ((WhatIfError, TimeSpecError), 2, str),
        ((EventError,), 2, str),
        ((BrokerResetError,), 2, str),
        ((SinkError, SnapshotError, DemoError, SourceError, IngestError, DevBrokerError, TopicAdminError,
          ProduceError), 1, str),
        ((SQLAlchemyError,), 1, lambda exc: f"cannot use the database: {_first_line(exc)}"),
        ((AlembicError,), 1, str),
    ]


def exit_for(exc: BaseException) -> tuple[int, str] | None:
    """The exit code and one-line message for ``exc``, or ``None`` when it is not ours to report."""
    for types, code, message in _exit_codes():
        if isinstance(exc, types):
            return (exc.code if isinstance(exc, CommandError) else code), message(exc)
    return None


def guarded(command: F, failure_code: int | None = None) -> F:
    """``command`` with the exit mapping applied; ``failure_code`` replaces every mapped code
    (``verify``, whose 1 means a divergence)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except typer.Exit:
            raise
        except Exception as exc:  # noqa: BLE001 - filtered by exit_for, re-raised when not ours
            mapped = exit_for(exc)
            if mapped is None:
                raise
            code, message = mapped
            sys.stderr.write(f"error: {message}\n")
            raise typer.Exit(failure_code if failure_code is not None else code) from None

    return run  # type: ignore[return-value]
