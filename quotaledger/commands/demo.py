"""``quotaledger demo`` and ``quotaledger simulate``: a real trace through a quota tree, simulated
closed-loop (``replay.demo``, ``replay.sim``)."""

from __future__ import annotations

from typing import Optional

import typer

from quotaledger.commands.errors import CommandError, writing
from quotaledger.commands.options import (
    MAPPING_OPTION, MODEL_OPTION, NODE_MAPPING_OPTION, NODES_OPTION, PLACEMENT_OPTION, QUOTA_OPTION, QUOTA_SCALE_OPTION,
    TRACE_OPTION, UNTIL_OPTION,
)
from quotaledger.views.output import console, err_console


def check_nodes(nodes: str | None, node_mapping: str | None) -> None:
    """``CommandError`` (exit 2) for ``--node-mapping`` without ``--nodes`` (the CSV it describes)."""
    if node_mapping is not None and nodes is None:
        raise CommandError("--node-mapping needs --nodes: give the node list CSV it describes (docs/traces.md)", 2)


def trace_of(trace: str | None, mapping: str | None) -> str:
    """``--trace``, ``dlrm`` when it is not given; ``CommandError`` (exit 2) for ``--mapping``
    without ``--trace``: a mapping describes the columns of the CSV file the user names."""
    if trace is None:
        if mapping is not None:
            raise CommandError("--mapping needs --trace: give the CSV file it describes (docs/traces.md)", 2)
        return "dlrm"
    return trace


def demo(
    trace: Optional[str] = TRACE_OPTION,
    mapping: Optional[str] = MAPPING_OPTION,
    quota: Optional[str] = QUOTA_OPTION,
    db: Optional[str] = typer.Option(
        None, "--db", help="SQLAlchemy URL of the store (default: a SQLite file in the output folder)."),
    out: Optional[str] = typer.Option(None, "--out", help="Output folder (default: out/demo-<trace>)."),
    until: Optional[str] = UNTIL_OPTION,
    model: str = MODEL_OPTION,
    quota_scale: str = QUOTA_SCALE_OPTION,
    nodes: Optional[str] = NODES_OPTION,
    node_mapping: Optional[str] = NODE_MAPPING_OPTION,
    placement: bool = PLACEMENT_OPTION,
) -> None:
    """The main job on a real trace: import it, build the quota tree (written as editable manifests),
    simulate it closed-loop, archive the history in SQL, and report per ClusterQueue and Cohort (per
    quota group under --model koordinator) (tables, PNG plots, index.html) — all in one output
    folder, named at the end.  With --placement, also node utilization, GPU fragmentation and the
    waits of the same run without placement."""
    from quotaledger.views.demo import demo_progress, print_demo
    from replay.demo import run_demo

    if model not in ("kueue", "koordinator", "volcano"):
        raise CommandError(f"--model: {model!r} is not a quota model the demo runs (kueue, koordinator, volcano)", 2)
    trace = trace_of(trace, mapping)
    check_nodes(nodes, node_mapping)
    err = err_console()
    with writing("the demo output"), demo_progress(err) as progress:
        result = run_demo(trace, mapping=mapping, quota=quota, db=db, out=out, until=until, progress=progress,
                          on_note=lambda text: err.print(text, markup=False, highlight=False), model=model,
                          quota_scale=quota_scale, nodes=nodes, node_mapping=node_mapping, placement=placement)
    print_demo(console(), result)


def simulate(
    out: str = typer.Option(..., "--out", help="Write the simulated event history (NDJSON) here."),
    trace: Optional[str] = TRACE_OPTION,
    mapping: Optional[str] = MAPPING_OPTION,
    quota: Optional[str] = QUOTA_OPTION,
    quota_out: Optional[str] = typer.Option(
        None, "--quota-out", help="Write the quota configuration used (as Kueue manifests) to this folder."),
    until: Optional[str] = UNTIL_OPTION,
    tick: str = typer.Option("5m", "--tick", help="Tick interval (duration; 0 = no ticks)."),
    finish_at_horizon: bool = typer.Option(
        False, "--finish-at-horizon", help="Finish jobs still running at the end at the horizon."),
    model: str = MODEL_OPTION,
    quota_scale: str = QUOTA_SCALE_OPTION,
    nodes: Optional[str] = NODES_OPTION,
    node_mapping: Optional[str] = NODE_MAPPING_OPTION,
    placement: bool = PLACEMENT_OPTION,
) -> None:
    """Import a trace, build its quota configuration, run the closed-loop simulation, write EVENTS.

    The output is a normal event file: `quotaledger replay OUT` gives the same decisions and hash.
    Rows the importer cannot read are reported on stderr with their line numbers and skipped.
    """
    from replay.demo import input_notes, load_inputs
    from replay.sim.manifests import write_manifests
    from replay.sim.simulator import simulate as run_simulation
    from replay.timespec import parse_span

    err = err_console()
    if model not in ("kueue", "koordinator", "volcano"):
        raise CommandError(f"--model: {model!r} is not a quota model the simulator runs "
                           "(kueue, koordinator, volcano)", 2)
    trace = trace_of(trace, mapping)
    check_nodes(nodes, node_mapping)
    imported, config, until_ms = load_inputs(trace, mapping, quota, until, model, quota_scale, nodes=nodes,
                                             node_mapping=node_mapping, placement=placement)
    tick_ms = parse_span(tick, "--tick")
    for line in input_notes(imported, config):
        err.print(line, markup=False, highlight=False)
    if quota_out:
        header = "\n".join([f"quotaledger quota configuration for trace {imported.name}", *config.notes])
        written = write_manifests(config, quota_out, header)
        err.print(f"wrote {len(written)} manifest files to {quota_out}", markup=False, highlight=False)
    start = imported.trace_start_ms
    horizon = until_ms if until_ms is not None else imported.trace_end_ms
    with writing(out):
        if err.is_terminal:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(TextColumn("simulating {task.description}"), BarColumn(),
                          TextColumn("{task.percentage:>3.0f}% of trace time"), TimeElapsedColumn(),
                          console=err, transient=True) as bar:
                task = bar.add_task(imported.name, total=max(1, horizon - start))
                result = run_simulation(imported, config, out, until_ms=until_ms, tick_ms=tick_ms,
                                        finish_at_horizon=finish_at_horizon,
                                        progress=lambda t: bar.update(task, completed=max(0, t - start)))
        else:
            result = run_simulation(imported, config, out, until_ms=until_ms, tick_ms=tick_ms,
                                    finish_at_horizon=finish_at_horizon)
    if result.unroutable:
        err.print(f"warning: {result.unroutable} jobs have no LocalQueue in the quota configuration "
                  "(they stay pending)", markup=False, highlight=False)
    typer.echo(f"wrote {out}: {result.summary()}")
    typer.echo(f"simulated in {result.seconds:.2f}s ({result.events / max(result.seconds, 1e-9):,.0f} events/s)")
