"""Ingest rate of a flood of rejected records naming thousands of distinct unknown clusters, next to
the rate of as many clean events, on SQLite and on PostgreSQL.

A rejected record joins a cluster's stream only when that cluster has state
(``streams.ingest_store.IngestStore.apply``), so such a flood must cost no restore and no engine per
name and flow at about the clean rate.  The script

1. produces the shipped example (its cluster has state) and then ``--records`` (default 8,000)
   rejected records (unknown type), each naming its own cluster ``flood-N`` (the producer keys it by
   that name), to a fresh topic;
2. produces as many clean events (the first ``--records`` lines of the closed-loop DLRM simulation,
   ``kafka_setup.event_file``) to another topic;
3. ingests each topic with ``streams.ingest.run_ingest`` into a fresh SQLite file and a fresh
   PostgreSQL database, and prints events/s (first record to last commit, as the worker counts) or
   the error that stopped the worker.

    .venv/bin/python benchmarks/unknown_cluster_flood.py [--records 8000] [--bootstrap HOST:PORT]
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

import orjson
from kafka_setup import add_common_arguments, broker, event_file, produce, scratch_databases

from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.ingest import IngestError, run_ingest
from streams.topics import Topics

EXAMPLE = Path(__file__).resolve().parent.parent / "replay" / "examples" / "two-teams.ndjson"


def flood(records: int) -> list[bytes]:
    """The example's events, then ``records`` rejected records naming ``records`` distinct clusters."""
    clean = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    return clean + [orjson.dumps({"id": f"g-{n}", "time": 1_772_442_000_000 + n, "cluster": f"flood-{n}",
                                  "type": "Nope"}) for n in range(records)]


def rate(bootstrap: str, url: str, topics: Topics) -> str:
    """``run_ingest`` of ``topics`` into ``url``: its events/s, or the error that stopped it."""
    try:
        stats = run_ingest(bootstrap, url, topics=topics, group=f"g{uuid.uuid4().hex[:8]}", exit_when_idle=2.0,
                           session_timeout_ms=DEV_SESSION_TIMEOUT_MS, handle_signals=False, publish=False)
    except IngestError as exc:
        return f"stopped: {str(exc).splitlines()[0][:160]}"
    return f"{stats.events_per_second:,.0f} events/s ({stats.consumed} records, {stats.rejected} rejected)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    parser.add_argument("--records", type=int, default=8000)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    clean_lines = [line for line in event_file(args).read_bytes().splitlines() if line.strip()][:args.records]
    run = uuid.uuid4().hex[:8]
    flood_file, clean_file = args.workdir / f"flood-{run}.ndjson", args.workdir / f"clean-{run}.ndjson"
    flood_file.write_bytes(b"\n".join(flood(args.records)) + b"\n")
    clean_file.write_bytes(b"\n".join(clean_lines) + b"\n")
    with broker(args.bootstrap) as bootstrap:
        flood_topics, _ = produce(flood_file, bootstrap, args.partitions)
        clean_topics, _ = produce(clean_file, bootstrap, args.partitions)
        with scratch_databases(args.pg_admin, 2) as (pg_flood, pg_clean):
            for store, urls in (("SQLite", (f"sqlite:///{args.workdir / f'flood-{run}.db'}",
                                             f"sqlite:///{args.workdir / f'clean-{run}.db'}")),
                                ("PostgreSQL", (pg_flood, pg_clean))):
                print(f"{store}: unknown-cluster flood {rate(bootstrap, urls[0], flood_topics)}; "
                      f"clean events {rate(bootstrap, urls[1], clean_topics)}", flush=True)

if __name__ == "__main__":
    main()
