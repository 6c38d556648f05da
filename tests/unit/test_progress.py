"""The replay progress bar: drawn on a terminal, absent otherwise, and it never changes the replay."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

from rich.console import Console

from quotaledger.views.progress import replay_progress
from replay.runner import run_file
from tests.paths import EXAMPLE



def test_bar_on_a_terminal_counts_every_event_and_leaves_the_replay_unchanged(tmp_path: Path) -> None:
    gz = tmp_path / "two-teams.ndjson.gz"
    gz.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    plain, _ = run_file(str(EXAMPLE))
    for source in (str(EXAMPLE), str(gz)):
        screen = io.StringIO()
        console = Console(file=screen, force_terminal=True, width=120)
        with replay_progress(source, console) as watch:
            assert watch is not None
            engine, result = run_file(source, watch=watch)
        assert engine.hash == plain.hash and result.lines == 39
        drawn = screen.getvalue()
        assert "39 events" in drawn and "events/s" in drawn and "100%" in drawn


def test_no_bar_without_a_terminal_or_for_stdin() -> None:
    piped = Console(file=io.StringIO(), force_terminal=False)
    with replay_progress(str(EXAMPLE), piped) as watch:
        assert watch is None
    with replay_progress("-", Console(file=io.StringIO(), force_terminal=True)) as watch:
        assert watch is None
