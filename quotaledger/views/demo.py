"""Terminal views of ``quotaledger demo``: Rich progress bars per stage and the closing report."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

if TYPE_CHECKING:
    from replay.demo import DemoResult, Progress as ProgressCallback

STAGES = {"import": "import the trace, build the quota tree", "simulate": "simulate (closed loop)",
          "archive": "replay into the SQL store", "report": "compute the report", "plots": "plot"}


@contextmanager
def demo_progress(console: Console) -> Iterator[ProgressCallback]:
    """A Rich progress display with one bar per demo stage (trace time for the simulation and the
    replay); yields the ``(stage, done, total)`` callback ``replay.demo.run_demo`` takes."""
    with Progress(TextColumn("{task.description:<40}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=console) as bar:
        tasks: dict[str, TaskID] = {}

        def update(stage: str, done: int, total: int) -> None:
            task = tasks.get(stage)
            if task is None:
                task = tasks[stage] = bar.add_task(STAGES.get(stage, stage), total=max(1, total))
            bar.update(task, completed=done, total=max(1, total))

        yield update


def print_demo(console: Console, result: DemoResult) -> None:
    """The report table, the longest waits with their explain commands, the output folder, the SQL
    URL, three example queries and the timing."""
    from replay.reports.page import example_queries, headers, node_label, table_rows
    from replay.store.db import redacted

    report = result.report
    table = Table(title=f"{report.cluster}: per {node_label(report)}, quota model {report.model} "
                        "(docs/demo.md: The demo report)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for i, header in enumerate(headers(report)):
        table.add_column(header, justify="left" if i < 2 else "right", no_wrap=i == 0)
    for node, row in zip(report.nodes, table_rows(report)):
        table.add_row(*row, style="bold" if node.kind in ("Cohort", "ParentQuota", "ParentQueue") else None)
    console.print(table)
    if result.longest:
        from replay.reports.page import longest_section

        section = longest_section(report, result.longest)
        assert section is not None
        longest = Table(title=section.title, title_justify="left", box=box.SIMPLE_HEAD)
        for header in section.columns:
            longest.add_column(header, overflow="fold")
        for row in section.rows:
            longest.add_row(*row)
        console.print(longest)
    if result.placement is not None:
        print_placement(console, result)
    sim, rep = result.simulation, result.replay
    console.print(f"simulation: {sim.summary()}", markup=False, highlight=False)
    total = sum(result.seconds.values())
    console.print(f"time: {total:.1f}s in all; simulate {result.seconds.get('simulate', 0):.1f}s "
                  f"({sim.events / max(result.seconds.get('simulate', 0), 1e-9):,.0f} events/s), replay into SQL "
                  f"{result.seconds.get('archive', 0):.1f}s ({rep.events_per_second:,.0f} events/s), report "
                  f"{result.seconds.get('report', 0):.1f}s, plots {result.seconds.get('plots', 0):.1f}s; "
                  f"{sim.events / max(total, 1e-9):,.0f} events/s end to end", markup=False, highlight=False)
    console.print(f"output folder: {result.out}  (open {result.html})", markup=False, highlight=False)
    url = redacted(result.url)
    console.print(f"SQL store: {url}   check it: quotaledger verify --db '{url}'",
                  markup=False, highlight=False)
    console.print("example queries (e.g. sqlite3 on the file, or psql):", markup=False)
    for what, sql in example_queries(report.cluster, report.model):
        console.print(f"  -- {what}\n  {sql}", markup=False, highlight=False)


def print_placement(console: Console, result: DemoResult) -> None:
    """The placement report (``replay.reports.placement``): waits per ClusterQueue observed, with
    and without placement; node utilization per group; the fragmentation summary."""
    from replay.reports.page import percent
    from replay.reports.placement import wait_percentiles as waits

    rep = result.placement
    assert rep is not None

    table = Table(title=f"{rep.cluster}: waits p50/p95 with and without placement (docs/demo.md: Placement)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for i, header in enumerate(("ClusterQueue", "jobs", "observed", "with placement", "never", "without", "never")):
        table.add_column(header, justify="left" if i == 0 else "right")
    for w in rep.waits:
        table.add_row(w.queue, f"{w.jobs:,}", waits(w.observed_waits), waits(w.placed_waits), f"{w.placed_never:,}",
                      waits(w.unplaced_waits), f"{w.unplaced_never:,}")
    console.print(table)
    util = ", ".join(f"{u.group} {u.resource} {percent(u.utilization)}" for u in rep.utilization
                     if u.resource == rep.gpu_resource)
    console.print(f"node utilization ({rep.gpu_resource}, time-weighted): {util}", markup=False, highlight=False)
    console.print(f"GPU fragmentation: {percent(rep.fragmented_share())} of the free GPUs no pending pod set could use "
                  "(while one was pending); plot fragmentation.png", markup=False, highlight=False)
