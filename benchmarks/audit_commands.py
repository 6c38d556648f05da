"""The audit commands on the demo store, timed as a user runs them: each command is the installed
``quotaledger`` console script in its own process (interpreter start and imports included), on the
demo's SQLite store and on the same history in PostgreSQL.

The moment asked about is the submission of the workload that waited longest (the README's
quickstart query), so ``list`` / ``share`` / ``explain`` / ``state`` look at a moment with a queue;
``whatif`` forks at ``1d`` with a patch that re-applies that workload's ClusterQueue at a quarter of
its nominal quota (no borrowing or lending limits).  Reported per command and store: wall-clock
seconds and CPU seconds of the child process (user + system), best of ``--repeat`` runs by CPU.

    python benchmarks/audit_commands.py                          # runs `quotaledger demo` twice first
    python benchmarks/audit_commands.py --out out/demo-dlrm --pg none   # an existing demo, SQLite only

The PostgreSQL store is a fresh database on ``--pg`` (default the local server), filled by
``quotaledger demo --db``; it is dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

CLI = str(Path(sys.executable).with_name("quotaledger"))
LONGEST_WAIT = ("SELECT d.workload, d.cluster_queue, e.event_time_ms FROM decisions d JOIN events e "
                "ON e.cluster = d.cluster AND e.event_id = 'submit/' || d.workload WHERE d.type = 'Admitted' "
                "ORDER BY d.decision_time_ms - e.event_time_ms DESC, d.workload LIMIT 1")


def run(args: list[str]) -> tuple[float, float]:
    """Run ``quotaledger ARGS``; returns (wall s, CPU s of the child).  Raises on a non-zero exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"quotaledger {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(args: list[str], repeat: int) -> tuple[float, float]:
    """The run with the least CPU of ``repeat`` runs."""
    return min((run(args) for _ in range(repeat)), key=lambda r: r[1])


def rfc3339(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))


def patch_file(events: Path, cluster_queue: str, out: Path, at_ms: int) -> Path:
    """A what-if patch: ``cluster_queue`` re-applied at ``at_ms`` with ¼ of each nominal quota."""
    marker = f'"config/ClusterQueue/{cluster_queue}"'
    with events.open() as f:
        event = next(json.loads(line) for line in f if marker in line)
    event.update(id="audit-benchmark-patch", time=at_ms)
    for group in event["object"]["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for r in flavor["resources"]:
                r.pop("borrowingLimit", None)
                r.pop("lendingLimit", None)
                number, suffix = re.fullmatch(r"(\d+)(\D*)", str(r["nominalQuota"])).groups()
                r["nominalQuota"] = f"{int(number) // 4}{suffix}"
    path = out / "audit-benchmark-patch.ndjson"
    path.write_text(json.dumps(event) + "\n")
    return path


def commands(workload: str, at: str, patch: Path) -> list[tuple[str, list[str]]]:
    return [
        ("list --at (pending, queue order)", ["list", "--at", at, "--limit", "0"]),
        ("history (every workload)", ["history", "--limit", "0"]),
        ("share --at", ["share", "--at", at]),
        ("explain --at", ["explain", workload, "--at", at]),
        ("explain --holders 10", ["explain", workload, "--at", at, "--holders", "10"]),
        ("state --at (tree)", ["state", "--at", at]),
        ("whatif --from 1d (closed loop)", ["whatif", "--from", "1d", "--patch", str(patch), "--json"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="an existing demo output folder (default: run the demo)")
    parser.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
                        help="PostgreSQL server to create a scratch database on, or 'none'")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    out = Path(args.out) if args.out else Path("out") / "audit-benchmark"
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([CLI, "demo", "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    sqlite_url = f"sqlite:///{(out / 'quotaledger.db').resolve()}"
    with sa.create_engine(sqlite_url).connect() as conn:
        workload, cluster_queue, submitted = conn.execute(sa.text(LONGEST_WAIT)).one()
        first = conn.execute(sa.text("SELECT min(event_time_ms) FROM events")).scalar_one()
    patch = patch_file(out / "events.ndjson", cluster_queue, out, first + 86_400_000)
    stores = [("SQLite", sqlite_url)]
    scratch = None
    if args.pg != "none":
        server = sa.create_engine(args.pg, isolation_level="AUTOCOMMIT")
        scratch = f"audit_bench_{uuid.uuid4().hex[:8]}"
        with server.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{scratch}"'))
        pg_url = args.pg.rsplit("/", 1)[0] + "/" + scratch
        subprocess.run([CLI, "demo", "--out", str(out.with_name(out.name + "-pg")), "--db", pg_url], check=True,
                       stdout=subprocess.DEVNULL)
        stores.append(("PostgreSQL", pg_url))
    at = rfc3339(submitted)
    print(f"moment: {at} (submission of {workload}, the longest wait; ClusterQueue {cluster_queue}); "
          f"best of {args.repeat} by CPU; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}\n")
    print("| command | " + " | ".join(f"{name} wall s | {name} CPU s" for name, _ in stores) + " |")
    print("| --- | " + " | ".join("---: | ---:" for _ in stores) + " |")
    try:
        for label, cmd in commands(workload, at, patch):
            cells = []
            for _, url in stores:
                wall, cpu = best([*cmd, "--db", url], args.repeat)
                cells.append(f"{wall:.2f} | {cpu:.2f}")
            print(f"| `{label}` | " + " | ".join(cells) + " |", flush=True)
    finally:
        if scratch is not None:
            with server.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE "{scratch}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
