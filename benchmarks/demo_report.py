"""Demo report benchmark: CPU time to build the report of a demo store (``build_report``: the
tables' one pass over the archive) and to draw its plots (``write_plots``: the time series of
``replay.reports.timeline`` — the wait heatmap, the shares, admission fair sharing per LocalQueue,
which reads the archive once more — and every PNG), each stage separately, best of ``--repeat``.

CPU time (``time.process_time``), not wall time: the machine the numbers in docs/benchmarks.md
were taken on is shared.  Use a compiled build (``pip install -e .`` compiles the engine, and with
it the AFS ledger the series replays through, with mypyc) when timing.

    quotaledger demo --out /tmp/demo                         # the DLRM store
    python benchmarks/demo_report.py sqlite:////tmp/demo/quotaledger.db --cluster dlrm
"""

from __future__ import annotations

import argparse
import tempfile
import time

import matplotlib

from replay.reports import plots, timeline
from replay.reports.tables import build_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="SQLAlchemy URL of a demo store")
    parser.add_argument("--cluster", default="dlrm")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    matplotlib.use("Agg")
    stages: dict[str, float] = {}

    def best(name: str, seconds: float) -> None:
        stages[name] = min(stages.get(name, seconds), seconds)

    for _ in range(args.repeat):
        t = time.process_time()
        report = build_report(args.url, args.cluster)
        best("report tables (build_report)", time.process_time() - t)
        edges = timeline.bucket_edges(report.start_ms, report.end_ms)
        t = time.process_time()
        timeline.wait_grid(report.waited, timeline.leaves(report), edges)
        timeline.share_series(report, edges)
        best("wait grid + shares", time.process_time() - t)
        t = time.process_time()
        timeline.afs_series(args.url, args.cluster, edges, report.start_ms, report.end_ms)
        best("AFS series (reads the store)", time.process_time() - t)
        with tempfile.TemporaryDirectory() as out:
            t = time.process_time()
            written = plots.write_plots(report, out, url=args.url)
            best(f"write_plots ({len(written)} PNGs, series included)", time.process_time() - t)
    for name, seconds in stages.items():
        print(f"{name:45s} {seconds:6.2f} s CPU (best of {args.repeat})")


if __name__ == "__main__":
    main()
