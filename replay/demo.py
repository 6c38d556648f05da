"""``quotaledger demo``: a real trace → quota tree → closed-loop simulation → SQL store → report.

:func:`run_demo` does the whole main job in one call and leaves everything in one output folder
(default ``out/demo-<trace>``)::

    quota/               the quota configuration used, as editable Kueue manifests (replay.sim.manifests)
    events.ndjson        the simulated history, a normal event file (replay.sim.simulator)
    quotaledger.db       the SQL store (SQLite) the history was replayed into, unless --db names another
    report.json          the report numbers, exact integers (replay.reports.tables)
    *.png, index.html    plots and the page that shows them with the report tables (replay.reports.plots,
                         replay.reports.page)

The simulation and the replay into SQL are two runs of the engine over the same events; the demo
checks that they end in the same hash, so the database is an auditable history (``quotaledger
verify --db URL`` recomputes it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from replay.sim.importers.jobs import ImportResult
from replay.sim.importers.outliers import outlier_warnings
from replay.sim.manifests import QuotaConfig, load_manifests, write_manifests
from replay.reports.plots import write_plots
from replay.sim.koordinator_quota import to_elastic_quotas
from replay.sim.volcano_quota import to_volcano_queues
from replay.sim.quota_tree import QuotaRule, generate_quota, parse_scale
from replay.reports.summary import LongWait, fairness, longest_waits, preemptions_by, priority_classes
from replay.reports.tables import Report, build_report
from replay.reports.placement import (
    PlacementReport, build_placement_report, placement_document, placement_html, wait_rows, write_fragmentation_plot,
)
from replay.reports.page import write_index
from replay.runner import ReplayResult
from replay.sim.simulator import SimulationResult, simulate
from replay.store.db import SinkError
from replay.sql_sink import replay_to_db
from replay.sim.traces import load_trace
from replay.sim.nodes import enable_placement, load_nodes, quota_only, with_nodes
from replay.timespec import parse_moment

__all__ = ["DemoError", "DemoResult", "run_demo", "load_inputs", "input_notes", "default_out", "Progress"]

Progress = Callable[[str, int, int], None]
"""``(stage, done, total)``: stages ``import``, ``simulate``, ``archive`` (trace time in ms since
the start), ``report``, ``plots`` (steps)."""


class DemoError(Exception):
    """The demo cannot run or its two engine runs disagree; the message says why."""


@dataclass
class DemoResult:
    """What one demo run produced.

    Attributes:
        out: the output folder; url: the SQL store; events / quota_dir / html / report_json: files
            written; pngs: plots written.
        trace / config: the imported trace and the quota configuration used.
        simulation / replay: counters of the simulation and of the replay into SQL.
        report: the report numbers; longest: its longest waits, explained (``replay.reports.summary``).
        hash: the engine hash after the last event (the same for both runs).
        html_sections: extra HTML sections of ``index.html`` (the placement report's), in order.
        placement: with ``placement``, the placement report (``replay.reports.placement``);
        unplaced: with ``placement``, the counters of the same inputs simulated without placement
            (``events-without-placement.ndjson``), whose waits the placement report compares.
        seconds: wall time per stage (reporting only).
    """

    out: Path
    url: str
    events: Path
    quota_dir: Path
    trace: ImportResult
    config: QuotaConfig
    simulation: SimulationResult
    replay: ReplayResult
    report: Report
    hash: str
    placement: PlacementReport | None = None
    unplaced: SimulationResult | None = None
    pngs: list[Path] = field(default_factory=list)
    longest: list[LongWait] = field(default_factory=list)
    html_sections: list[str] = field(default_factory=list)
    html: Path | None = None
    report_json: Path | None = None
    seconds: dict[str, float] = field(default_factory=dict)


DEMO_SNAPSHOT_EVERY = 4_000
"""The demo's store takes a snapshot every 4,000 events (and at the end): a question about any
moment (``state --at``, ``explain``, ``list``, ``share``) then replays at most 4,000 archived events
from the nearest one (about 0.5 s), for about 0.3 s of dumping per snapshot while archiving."""


def default_out(trace: str) -> Path:
    """``out/demo-<name>`` for a trace name or path (the file or folder name without suffixes)."""
    name = Path(trace).name.split(".")[0] or "trace"
    return Path("out") / f"demo-{name}"


def load_inputs(trace: str, mapping: str | None, quota: str | None, until: str | None, model: str = "kueue",
                quota_scale: str = "1", *, nodes: str | None = None, node_mapping: str | None = None,
                placement: bool = False) -> tuple[ImportResult, QuotaConfig, int | None]:
    """Import the trace, load or generate its quota configuration, read ``until`` (epoch ms or ``None``);
    shared by ``quotaledger demo`` and ``quotaledger simulate``.  ``quota_scale`` (``--quota-scale``,
    a decimal number > 0) multiplies every generated quota (``replay.sim.quota_tree.QuotaRule.scale``);
    with a ``quota`` folder it must be 1.  ``model`` ``koordinator``: a Kueue
    configuration (generated or loaded) is translated to ElasticQuotas
    (``replay.sim.koordinator_quota``), ``volcano``: to a Volcano queue tree
    (``replay.sim.volcano_quota``); a loaded one that already holds that model's objects is kept.
    ``nodes`` (with ``node_mapping`` for a CSV file): the trace runs on that node inventory
    (``replay.sim.nodes``: its Nodes, flavors and Topologies replace the trace's own, before the
    quota is generated); ``placement``: the EngineConfig turns the placement stage on
    (``replay.sim.nodes.enable_placement``); without it a ``koordinator`` or ``volcano``
    configuration gets ``spec.placement.enable: false`` (``replay.sim.nodes.quota_only``: those
    models place pods whenever a Node exists).  Without both, the decisions are what they were before
    node inventories existed (a pod-scheduling model's events gain that EngineConfig field).

    Raises:
        DemoError: the trace, mapping, quota folder, ``until`` or ``quota_scale`` cannot be used (the
            message says which).
    """
    from replay.sim.importers.jobs import TraceImportError
    from replay.sim.importers.mapping import MappingError
    from replay.sim.manifests import QuotaConfigError

    try:
        scale = parse_scale(quota_scale)
        if quota and scale != 1:
            raise DemoError("--quota-scale scales the generated quota tree; with --quota, edit the manifests instead")
        imported = load_trace(trace, mapping)
        if nodes is not None:
            imported = with_nodes(imported, load_nodes(nodes, node_mapping))
        config = load_manifests(quota, imported.name) if quota else generate_quota(imported, QuotaRule(scale=scale))
        if model == "koordinator" and config.model != "koordinator":
            config = to_elastic_quotas(config, capacity_node=not imported.nodes)
        elif model == "volcano" and config.model != "volcano":
            config = to_volcano_queues(config, capacity_node=not imported.nodes)
        if placement:
            config = enable_placement(config)
        elif config.model in ("koordinator", "volcano"):
            config = quota_only(config)
    except (TraceImportError, MappingError, QuotaConfigError, ValueError) as exc:
        raise DemoError(str(exc)) from exc
    try:
        until_ms = parse_moment(until, "--until", (imported.trace_start_ms, imported.trace_end_ms)) if until else None
    except ValueError as exc:
        raise DemoError(str(exc)) from exc
    return imported, config, until_ms


def input_notes(imported: ImportResult, config: QuotaConfig, max_rows: int = 20) -> list[str]:
    """What to tell the user about the inputs: the first ``max_rows`` skipped rows (line and
    reason) and how many more, the job count, outlier warnings
    (``replay.sim.importers.outliers``), and the quota configuration's notes."""
    lines = [f"skipped {bad}" for bad in imported.bad_rows[:max_rows]]
    if len(imported.bad_rows) > max_rows:
        lines.append(f"… {len(imported.bad_rows) - max_rows} more skipped rows")
    lines.append(f"{imported.name}: {len(imported.jobs)} jobs, {len(imported.bad_rows)} rows skipped, "
                 f"{len(imported.nodes)} nodes")
    return lines + outlier_warnings(imported) + list(config.notes)


def run_demo(trace: str = "dlrm", *, mapping: str | None = None, quota: str | None = None, db: str | None = None,
             out: str | Path | None = None, until: str | None = None, progress: Progress | None = None,
             on_note: Callable[[str], None] | None = None, model: str = "kueue", quota_scale: str = "1",
             nodes: str | None = None, node_mapping: str | None = None, placement: bool = False) -> DemoResult:
    """Run the demo (module docstring) and write its output folder.

    Args:
        trace: ``dlrm`` (default), ``openb``, or a CSV path (with ``mapping``); see ``replay.sim.traces``.
        mapping: mapping YAML for a generic CSV trace.
        quota: folder of Kueue manifests to use instead of the generated quota tree.
        db: SQLAlchemy URL of the store (default: ``sqlite:///<out>/quotaledger.db``); the trace's
            cluster is replaced there if it already exists.
        out: output folder (default :func:`default_out`).
        until: stop the simulation here: a moment of ``replay.timespec`` (a duration after the trace's
            first submission or before its last, a date, an RFC 3339 time).
        progress: progress callback (:data:`Progress`).
        on_note: called with human-readable notes (skipped rows, the quota rule).
        model: ``kueue`` (default), ``koordinator`` (the quota tree translated to ElasticQuotas, the
            jobs run as Pods) or ``volcano`` (translated to Volcano queues, the jobs run as PodGroups;
            ``load_inputs``).
        quota_scale: ``--quota-scale``: multiplies every quota of the generated tree (``load_inputs``).

    Raises:
        DemoError: the trace, mapping, quota folder or ``until`` cannot be used; the store cannot
            be written or read; the two engine runs disagree.
        OSError: the output folder cannot be written.
    """
    tick = progress or (lambda stage, done, total: None)
    note = on_note or (lambda text: None)
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    tick("import", 0, 1)
    imported, config, until_ms = load_inputs(trace, mapping, quota, until, model, quota_scale, nodes=nodes,
                                             node_mapping=node_mapping, placement=placement)
    tick("import", 1, 1)
    for line in input_notes(imported, config):
        note(line)
    out_dir = Path(out) if out is not None else default_out(trace)
    out_dir.mkdir(parents=True, exist_ok=True)
    quota_dir = out_dir / "quota"
    write_manifests(config, quota_dir, "\n".join([f"quotaledger quota configuration for trace {imported.name}",
                                                  *config.notes]))
    url = db or f"sqlite:///{(out_dir / 'quotaledger.db').resolve()}"
    events = out_dir / "events.ndjson"
    start = imported.trace_start_ms
    horizon = until_ms if until_ms is not None else imported.trace_end_ms
    span = max(1, horizon - start)
    seconds["import"] = time.perf_counter() - clock

    clock = time.perf_counter()
    sim = simulate(imported, config, events, until_ms=until_ms,
                   progress=lambda t: tick("simulate", min(span, max(0, t - start)), span))
    unplaced = None
    if placement:
        _, baseline, _ = load_inputs(trace, mapping, quota, until, model, quota_scale, nodes=nodes,
                                     node_mapping=node_mapping)
        unplaced = simulate(imported, baseline, out_dir / "events-without-placement.ndjson", until_ms=until_ms)
    seconds["simulate"] = time.perf_counter() - clock
    horizon = sim.until_ms  # without --until, the run goes on until the last job that waited has finished
    if sim.cut:
        note(f"{sim.cut} jobs were still running at --until (their run time had not ended): cut there")
    if sim.unroutable:
        note(f"warning: {sim.unroutable} jobs have no LocalQueue in the quota configuration (they stay pending)")

    clock = time.perf_counter()
    count = [0]

    def archived(d: object) -> None:
        count[0] += 1
        if count[0] % 1000 == 0:
            tick("archive", min(span, max(0, d.time_ms - start)), span)  # type: ignore[attr-defined]

    try:
        engine, replayed = replay_to_db(str(events), url, replace=True, on_decision=archived,
                                        snapshot_every=DEMO_SNAPSHOT_EVERY)
    except SinkError as exc:
        raise DemoError(str(exc)) from exc
    tick("archive", span, span)
    seconds["archive"] = time.perf_counter() - clock
    if engine.hash != sim.hash:
        raise DemoError(f"the replay into SQL ended in hash {engine.hash}, the simulation in {sim.hash}")

    clock = time.perf_counter()
    tick("report", 0, 1)
    observed = {key: job.observed_wait_ms for key, job in sim.job_of.items() if job.observed_wait_ms is not None}
    try:
        report = build_report(url, imported.name, observed_waits=observed, start_ms=start, end_ms=horizon)
        longest = longest_waits(url, report)
    except SinkError as exc:
        raise DemoError(str(exc)) from exc
    tick("report", 1, 1)
    seconds["report"] = time.perf_counter() - clock
    result = DemoResult(out_dir, url, events, quota_dir, imported, config, sim, replayed, report, engine.hash,
                        longest=longest, unplaced=unplaced, seconds=seconds)
    if placement:
        clock = time.perf_counter()
        try:
            result.placement = build_placement_report(url, imported.name, start_ms=start, end_ms=horizon)
        except SinkError as exc:
            raise DemoError(str(exc)) from exc
        result.placement.waits = wait_rows(imported.name, sim, unplaced)
        seconds["placement report"] = time.perf_counter() - clock

    clock = time.perf_counter()
    result.pngs = write_plots(report, out_dir, progress=lambda done, total: tick("plots", done, total), url=url)
    if result.placement is not None:
        frag = write_fragmentation_plot(result.placement, out_dir)
        result.pngs += [frag] if frag is not None else []
        result.html_sections.append(placement_html(result.placement))
    result.report_json = out_dir / "report.json"
    # stdlib json: integrals of bytes × ms exceed 64 bits, which orjson refuses
    result.report_json.write_text(json.dumps(
        {"cluster": report.cluster, "model": report.model, "startMs": report.start_ms, "endMs": report.end_ms,
         "hash": engine.hash,
         "nodes": [asdict(n) for n in report.nodes],
         "priorityClasses": [{"priorityClass": st.priority_class, "submitted": st.submitted, "admitted": st.admitted,
                              "finished": st.finished, "waitsMs": st.waits_ms, "jctMs": st.jct_ms,
                              "boundedSlowdown": [str(x) for x in st.slowdown]} for st in priority_classes(report)],
         "jainIndex": [{"scope": scope, "clusterQueues": n, "index": None if j is None else str(j)}
                       for scope, n, j in fairness(report)],
         "preemptions": [{"reason": r, "preemptorClusterQueue": q, "count": c, "lostGpuMs": g}
                         for r, q, c, g in preemptions_by(report)],
         # without the explain command: it names the store, and the same history gives the same file
         "longestWaits": [{k: v for k, v in asdict(w).items() if k != "command"} for w in longest],
         **({"placement": placement_document(result.placement)} if result.placement is not None else {})},
        indent=1) + "\n", encoding="utf-8")
    result.html = write_index(result)
    seconds["plots"] = time.perf_counter() - clock
    return result
