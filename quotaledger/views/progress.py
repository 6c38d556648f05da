"""Rich progress bars on a terminal: ``quotaledger replay`` (share of the file read, events/s, ETA)
and ``step_progress`` for a computation that counts its steps (``quotaledger whatif``).

Shown only when stderr is a terminal and the source is a file (its size gives the total; for a
gzip file, the compressed bytes read); otherwise nothing changes in the output.  The bar is
transient: the usual one-line summary replaces it.  It only observes the line stream
(``replay.ndjson.open_source(watch=...)``) and never touches events or decisions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from rich.console import Console
from rich.progress import (
    BarColumn, Progress, ProgressColumn, Task, TaskProgressColumn, TextColumn, TimeRemainingColumn,
)
from rich.text import Text

from replay.ndjson import Watch

UPDATE_EVERY = 4096
"""Lines between two updates of the bar (keeps its cost out of the replay rate)."""


class EventRateColumn(ProgressColumn):
    """Events read so far and events per second of wall time."""

    def render(self, task: Task) -> Text:
        events = task.fields.get("events", 0)
        elapsed = task.elapsed or 0.0
        rate = f"{events / elapsed:,.0f} events/s" if elapsed > 0 else "- events/s"
        return Text(f"{events:,} events  {rate}")


@contextmanager
def replay_progress(source: str, console: Console | None = None) -> Iterator[Watch | None]:
    """A ``watch`` for ``open_source`` that drives a progress bar, or ``None`` when no bar is shown
    (stderr not a terminal, stdin, or a file whose size cannot be read)."""
    console = console or Console(stderr=True)
    if source == "-" or not console.is_terminal:
        yield None
        return
    try:
        size = os.path.getsize(source)
    except OSError:
        yield None
        return
    with Progress(TextColumn("replay"), BarColumn(), TaskProgressColumn(), EventRateColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("replay", total=max(size, 1), events=0)

        def watch(lines: Iterable[bytes], raw: BinaryIO) -> Iterator[bytes]:
            n = 0
            for line in lines:
                n += 1
                if n % UPDATE_EVERY == 0:
                    bar.update(task, completed=raw.tell(), events=n)
                yield line
            bar.update(task, completed=size, events=n)

        yield watch


@contextmanager
def step_progress(label: str, console: Console | None = None) -> Iterator[Callable[[int, int], None] | None]:
    """A transient bar for a long computation that reports ``(done, total)`` steps (``quotaledger
    whatif``: events stepped in both branches), or ``None`` when stderr is not a terminal."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    with Progress(TextColumn(label), BarColumn(), TaskProgressColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task(label, total=1)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=max(total, 1))

        yield update
