"""Engine throughput on Kueue's large-scale performance shape (reference/kueue.md §7.1).

Kueue's ``test/performance/scheduler/configs/large-scale``: 1,000 ClusterQueues (nominal 20 cpu,
borrowingLimit 100), per ClusterQueue 35 small (1 cpu, 200 ms, priority 50, one every 100 ms),
11 medium (5 cpu, 500 ms, priority 100, every 500 ms) and 4 large (20 cpu, 1,000 ms, priority 200,
every 1,200 ms) workloads = 50,000 workloads.  Here the ClusterQueues sit under a three-level
cohort tree (root → mid cohorts → leaf cohorts of 100 ClusterQueues), the same depth for every
size.  By default every size gets the same 50,000 workloads (dealt round-robin over its queues),
so sizes differ only in the number of queues; ``--per-queue`` gives every queue Kueue's own 50
instead (500,000 workloads at 10,000 queues).

The event file is produced closed-loop (each admitted workload finishes after its run time) and
kept in ``--workdir`` for the next run with the same arguments (``cached_generate``; the replay's
hash is checked against the generation's, ``--regenerate`` writes it anew).  Alone, a size is timed
in two passes over the same bytes: raw ``orjson.loads`` of every line, and the engine alone
(``decode_event`` + ``Engine.apply``), wall clock.  With a variant (``--afs``, ``--preemption``,
``--fair-sharing``) the files of a size are replayed in turn, ``--rounds`` times, in CPU time
(``alternated``: a small file several times per round, about ``ROUND_EVENTS`` events' worth), best
round of each.  Prints events/s and µs per admission per size and variant.

With ``--preemption`` every size also runs with Kueue's preemption on every ClusterQueue
(``withinClusterQueue: LowerPriority``, ``reclaimWithinCohort: Any``, ``borrowWithinCohort:
LowerPriority``): the priority mix above makes large workloads preempt small and medium ones that
borrow; a preempted workload's pending finish is cancelled and it runs its full time again once
re-admitted (``releaseOn: Decision``).  Without the flag the ClusterQueues have no preemption policy.
``--fair-sharing`` runs two fair-sharing variants beside the plain one: ``FS-NP``, fair sharing on and
every preemption policy ``Never`` (the DRS tournament orders the heads, nothing is preempted), and
``FS``, fair sharing on with the preemption policies above (fair-sharing preemption picks the victims).
With ``--preemption`` or ``--fair-sharing`` every variant of the run (the one without preemption
included) uses Kueue's own per-queue shape (``--per-queue``: 50 workloads per ClusterQueue): the
50,000 workloads of the default, dealt over 10,000 queues, leave 5 per queue and the cohorts with
room to spare, so nothing would contend or be preempted at that size.  Per queue the load is then
the same at every size (about 24 cpu wanted against 20 nominal), so every size contends and
preempts alike and only the breadth of the tree differs.

    python benchmarks/kueue_scale.py                 # 100, 1,000 and 10,000 ClusterQueues
    python benchmarks/kueue_scale.py --sizes 1000 --afs   # with and without admission fair sharing
    python benchmarks/kueue_scale.py --fair-sharing       # without fair sharing, the DRS tournament alone, + fair-sharing preemption
    python benchmarks/kueue_scale.py --preemption         # with and without preemption
"""

from __future__ import annotations

import argparse
import gc
import heapq
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from statemodel.driver import gc_paused
from statemodel.engine import Engine
from statemodel.events.decode import decode_event

API = "kueue.x-k8s.io/v1beta2"
EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
CLASSES = (  # name, cpu, run ms, priority, interval ms, count per ClusterQueue
    ("small", "1", 200, 50, 100, 35),
    ("medium", "5", 500, 100, 500, 11),
    ("large", "20", 1000, 200, 1200, 4),
)


def _cohort_names(n_queues: int) -> list[tuple[str, str | None]]:
    """(cohort, parent) pairs of a three-level tree: root → mid cohorts → leaf cohorts of 100
    ClusterQueues, at most 10 leaves per mid.  Every size has the same depth, so sizes differ
    only in breadth."""
    leaves = max(1, n_queues // 100)
    mids = (leaves + 9) // 10
    cohorts: list[tuple[str, str | None]] = [("root", None)]
    cohorts += [(f"m{i}", "root") for i in range(mids)]
    cohorts += [(f"c{i}", f"m{i // 10}") for i in range(leaves)]
    return cohorts


PREEMPTION = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
              "borrowWithinCohort": {"policy": "LowerPriority"}}


def config_events(n_queues: int, afs: bool, preemption: bool = False, fair: bool = False) -> list[dict]:
    """ResourceFlavor, Cohorts, ClusterQueues and LocalQueues of the shape, as EVENTS.md dicts; with
    ``afs``, an EngineConfig turning admission fair sharing on and every ClusterQueue usage based;
    with ``preemption``, every ClusterQueue's ``spec.preemption`` is ``PREEMPTION``; with ``fair``, fair
    sharing on (``spec.fairSharing.enable``), ClusterQueue weights 1, 2, 3 in turn."""
    out: list[dict] = [{"kind": "ResourceFlavor", "metadata": {"name": "default"}}]
    if afs or fair:
        spec: dict = {}
        if afs:
            spec["admissionFairSharing"] = {"usageHalfLifeTime": "10m", "usageSamplingInterval": "1s"}
        if fair:
            spec["fairSharing"] = {"enable": True}
        out.insert(0, {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
                       "spec": spec})
    cohorts = _cohort_names(n_queues)
    for name, parent in cohorts:
        out.append({"kind": "Cohort", "metadata": {"name": name}, "spec": {"parentName": parent} if parent else {}})
    leaf = [name for name, _ in cohorts if name.startswith("c")]
    per_leaf = n_queues // len(leaf)
    for i in range(n_queues):
        out.append({"kind": "ClusterQueue", "metadata": {"name": f"cq{i}"}, "spec": {
            "cohortName": leaf[min(i // per_leaf, len(leaf) - 1)],
            **({"fairSharing": {"weight": str(1 + i % 3)}} if fair else {}),
            **({"preemption": PREEMPTION} if preemption else {}),
            **({"admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"}} if afs else {}),
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}]}]}]}})
        out.append({"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": f"ns{i}"},
                    "spec": {"clusterQueue": f"cq{i}"}})
    return [{"type": "Applied", "object": {"apiVersion": API, **o}} for o in out]


GENERATOR_VERSION = 2
"""Bumped whenever ``generate`` would write different bytes for the same arguments (the cache key)."""


def _line(seq: int, at_ms: int, body: bytes) -> bytes:
    """``orjson.dumps({"id": f"e{seq}", "time": EPOCH_MS + at_ms, **event})`` for ``body`` =
    ``orjson.dumps(event)`` without its opening brace: the same bytes, formatted instead of encoded."""
    return b'{"id":"e%d","time":%d,%s' % (seq, EPOCH_MS + at_ms, body)


def generate(n_queues: int, path: Path, afs: bool = False, total: int | None = 50_000,
             preemption: bool = False, fair: bool = False) -> dict:
    """Write the closed-loop event file for ``n_queues`` ClusterQueues; return counts and the engine hash.

    ``total`` workloads in Kueue's 35 : 11 : 4 mix are dealt round-robin over the queues (each
    queue's share submitted at its class interval); ``None`` gives every queue Kueue's own 50.
    A preempted workload's scheduled finish is dropped (it finishes a full run time after its next
    admission).  The loop runs the engine on every line it writes (the finishes follow its
    admissions), so generating costs one engine pass — with the cyclic GC paused, as every engine
    path does (``statemodel.driver.gc_paused``; with it running, the collections over the growing
    engine state made generating ten times slower than a replay); the lines themselves are formatted
    from per-event bodies (``_line``), not built as dicts and encoded whole.
    """
    engine = Engine()
    seq = 0
    apply = engine.apply
    with path.open("wb") as out, gc_paused():
        write = out.write

        def emit(body: bytes, at_ms: int) -> list:
            nonlocal seq
            seq += 1
            line = _line(seq, at_ms, body)
            write(line)
            write(b"\n")
            return apply(decode_event(line))

        for event in config_events(n_queues, afs, preemption, fair):
            emit(orjson.dumps(event)[1:], 0)
        pending: list[tuple[int, int, int, int, int]] = []  # at, order, class (-1: finish), queue, index
        order = 0
        classes = []
        for c, (cls, cpu, run_ms, prio, every, count) in enumerate(CLASSES):
            spec = orjson.dumps({"queueName": "lq", "priority": prio,
                                 "podSets": [{"name": "main", "count": 1, "requests": {"cpu": cpu}}]})
            head = b'"type":"Applied","object":{"apiVersion":"' + API.encode() + b'","kind":"Workload","metadata":'
            classes.append((cls, run_ms, head, b',"spec":' + spec + b"}}"))
            per_class = count * n_queues if total is None else total * count // 50
            for j in range(per_class):
                i, k = j % n_queues, j // n_queues
                order += 1
                heapq.heappush(pending, (1000 + k * every + i % 97, order, c, i, k))
        admissions = preemptions = 0
        running: dict[str, int] = {}  # workload -> the order of its scheduled finish
        run_of: dict[str, int] = {}
        finishing: dict[int, str] = {}  # order of a scheduled finish -> workload
        while pending:
            at, at_order, c, i, k = heapq.heappop(pending)
            if c < 0:
                key = finishing.pop(at_order)
                if running.get(key) != at_order:
                    continue  # preempted since: that run never finishes
                del running[key]
                body = b'"type":"WorkloadFinished","workload":' + orjson.dumps(key) + b"}"
            else:
                cls, run_ms, head, tail = classes[c]
                name = f"{cls}-{k}"
                run_of[f"ns{i}/{name}"] = run_ms
                body = head + orjson.dumps({"name": name, "namespace": f"ns{i}"}) + tail
            for decision in emit(body, at):
                if decision.kind == "Admitted":
                    admissions += 1
                    order += 1
                    running[decision.workload] = order
                    finishing[order] = decision.workload
                    heapq.heappush(pending, (at + run_of[decision.workload], order, -1, 0, 0))
                elif decision.kind == "Preempted":
                    preemptions += 1
                    running.pop(decision.workload, None)
    return {"events": seq, "admissions": admissions, "preemptions": preemptions, "hash": engine.hash}


def cached_generate(n_queues: int, path: Path, afs: bool = False, total: int | None = 50_000,
                    preemption: bool = False, fair: bool = False, regenerate: bool = False) -> dict:
    """``generate``, or the counts of the file a previous run wrote to ``path`` with the same
    arguments and ``GENERATOR_VERSION`` (kept in ``<path>.json`` beside it).  A cached file is a
    closed loop of the engine that wrote it: ``main`` replays it and compares the hash; on a
    mismatch (the engine's decisions changed since) ``--regenerate`` writes it anew
    (``regenerate``), and the new file is cached in turn."""
    meta_path = path.with_name(path.name + ".json")
    key = {"version": GENERATOR_VERSION, "queues": n_queues, "afs": afs, "total": total,
           "preemption": preemption, "fair": fair}
    if not regenerate and path.exists() and meta_path.exists():
        meta = orjson.loads(meta_path.read_bytes())
        if meta.get("key") == key:
            return meta["counts"] | {"cached": True}
    counts = generate(n_queues, path, afs, total, preemption, fair)
    meta_path.write_bytes(orjson.dumps({"key": key, "counts": counts}))
    return counts | {"cached": False}


def _replay(lines: list[bytes], clock: Callable[[], float] = time.process_time) -> tuple[float, int, str]:
    """One engine pass over ``lines``: (seconds of ``clock``, admissions, hash); ``clock`` is CPU time of
    this process by default: on a shared machine other jobs stretch the wall clock, not this process's CPU time."""
    gc.collect()  # the cyclic GC is paused while timing; start each pass clean
    engine = Engine()
    admissions = 0
    start = clock()
    for line in lines:
        for decision in engine.apply(decode_event(line)):
            admissions += decision.kind == "Admitted"
    return clock() - start, admissions, engine.hash


def best_replay(path: Path, passes: int = 2, clock: Callable[[], float] = time.process_time) -> dict:
    """The engine alone over ``path`` (decode + apply), the best of ``passes``, with the cyclic GC
    paused as the driver's paths do (``statemodel.driver.gc_paused``): events, admissions, events/s,
    µs per admission and the engine's hash.  The other models' scale benchmarks measure with it;
    ``clock`` is this process's CPU time by default (other jobs on a shared machine do not count);
    ``time.perf_counter`` for wall time."""
    lines = path.read_bytes().splitlines()
    gc.disable()
    try:
        seconds, admissions, digest = min(_replay(lines, clock) for _ in range(passes))
    finally:
        gc.enable()
    return {"events": len(lines), "admissions": admissions, "eps": len(lines) / seconds,
            "us_per_admission": seconds * 1e6 / max(1, admissions), "hash": digest}


ROUND_EVENTS = 200_000
"""Events a round replays of each file at least: a small file is replayed several times in a round
(``alternated``), so that every size's round lasts long enough to be timed steadily."""


def alternated(paths: list[Path], rounds: int, round_events: int = ROUND_EVENTS) -> list[dict]:
    """The engine alone over each of ``paths`` in turn, ``rounds`` times, in CPU time
    (``time.process_time``: the machine's other jobs do not count), cyclic GC paused; per path the
    best round, as ``best_replay`` reports it.  In a round a file is replayed ``ceil(round_events /
    its events)`` times, each pass on a new engine, and the round's time is their mean: a 10,000-event
    file is then timed over 20 passes, not one of a fraction of a second that a scheduler tick
    distorts.  Alternating the files in one process exposes them to the same machine state, so their
    ratio is the number to read."""
    texts = [path.read_bytes().splitlines() for path in paths]
    passes = [max(1, -(-round_events // max(1, len(lines)))) for lines in texts]
    best: list[tuple[float, int, str] | None] = [None] * len(paths)
    gc.disable()
    try:
        for _ in range(rounds):
            for j, lines in enumerate(texts):
                runs = [_replay(lines, time.process_time) for _ in range(passes[j])]
                assert len({(admissions, digest) for _, admissions, digest in runs}) == 1
                run = (sum(seconds for seconds, _, _ in runs) / passes[j], runs[0][1], runs[0][2])
                if best[j] is None or run[0] < best[j][0]:
                    best[j] = run
    finally:
        gc.enable()
    out = []
    for lines, run, n in zip(texts, best, passes):
        assert run is not None
        seconds, admissions, digest = run
        out.append({"events": len(lines), "admissions": admissions, "eps": len(lines) / seconds,
                    "us_per_admission": seconds * 1e6 / max(1, admissions), "hash": digest, "passes": n})
    return out


def measure(path: Path) -> dict:
    """Time raw decode and engine replay of ``path``, each the best of several passes (2 to 5, about
    300,000 events' worth; the engine's with ``best_replay``)."""
    lines = path.read_bytes().splitlines()
    passes = max(2, min(5, 300_000 // len(lines)))
    decode_s = min(_time(lambda: [orjson.loads(line) for line in lines]) for _ in range(passes))
    engine = best_replay(path, passes)
    return {"events": len(lines), "admissions": engine["admissions"], "decode_eps": len(lines) / decode_s,
            "engine_eps": engine["eps"], "us_per_admission": engine["us_per_admission"], "hash": engine["hash"]}


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="comma-separated ClusterQueue counts")
    parser.add_argument("--workdir", default="benchmarks/out", type=Path)
    parser.add_argument("--per-queue", action="store_true",
                        help="50 workloads per queue (Kueue's per-queue mix) instead of 50,000 in all")
    parser.add_argument("--afs", action="store_true",
                        help="also run every size with admission fair sharing on for every ClusterQueue")
    parser.add_argument("--preemption", action="store_true",
                        help="also run every size with preemption on for every ClusterQueue")
    parser.add_argument("--fair-sharing", action="store_true",
                        help="also run every size with fair sharing on: once without preemption (FS-NP: the DRS "
                             "tournament alone) and once with it (FS: fair-sharing preemption chooses the victims)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="with a variant: engine passes per file, the files alternated, best CPU time of each")
    parser.add_argument("--regenerate", action="store_true", help="write the event files even when cached")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.preemption or args.fair_sharing:
        args.per_queue = True  # the shape that contends at every size (module docstring)
        print("per-queue shape: 50 workloads per ClusterQueue (Kueue's large-scale mix)", flush=True)
    variants = [("", False, False, False)]
    if args.afs:
        variants.append(("AFS", True, False, False))
    if args.preemption:
        variants.append(("PRE", False, True, False))
    if args.fair_sharing:
        variants.append(("FS-NP", False, False, True))  # the tournament alone: every policy Never
        variants.append(("FS", False, True, True))
    total = None if args.per_queue else 50_000
    rows: dict[str, list[tuple[int, dict]]] = {label: [] for label, _, _, _ in variants}
    for n in (int(s) for s in args.sizes.split(",")):
        paths: list[Path] = []
        gens: list[dict] = []
        for label, afs, preemption, fair in variants:
            suffix = f"{'-pq' if args.per_queue else ''}{'-afs' if afs else ''}{'-preemption' if preemption else ''}{'-fair' if fair else ''}"
            path = args.workdir / f"kueue-scale-{n}{suffix}.ndjson"
            start = time.process_time()
            gen = cached_generate(n, path, afs, total, preemption, fair, args.regenerate)
            print(f"{n:>6} CQs {label or 'plain':<5} {'cached' if gen.get('cached') else 'generated'}: {path} "
                  f"({time.process_time() - start:.1f} s CPU)", flush=True)
            paths.append(path)
            gens.append(gen)
        if len(variants) == 1:
            results = [measure(paths[0])]
        else:
            results = [{"engine_eps": r["eps"], **r} for r in alternated(paths, args.rounds)]
        for (label, afs, preemption, fair), path, gen, result in zip(variants, paths, gens, results):
            if result["hash"] != gen["hash"]:
                raise SystemExit(f"{path}: replay hash {result['hash'][:12]} differs from its generation's "
                                 f"{gen['hash'][:12]} (the engine's decisions changed since it was cached: "
                                 f"rerun with --regenerate)")
            decode = f"orjson {result['decode_eps']:>10,.0f} ev/s  " if "decode_eps" in result else ""
            print(f"{n:>6} CQs {label or 'plain':<5} {result['events']:>8} events  {result['admissions']:>7} "
                  f"admissions  {gen['preemptions']:>6} preemptions  {decode}engine {result['engine_eps']:>8,.0f} "
                  f"ev/s  {result['us_per_admission']:7.1f} µs/admission"
                  + (f"  ({result['passes']} passes a round)" if result.get("passes", 1) > 1 else ""), flush=True)
            if label:
                print(f"        {label} on: {result['engine_eps'] / results[0]['engine_eps']:.0%} of the "
                      f"events/s without it")
            if label == "FS":  # fair-sharing preemption against fair sharing alone, same configuration
                fs_np = results[[v[0] for v in variants].index("FS-NP")]
                print(f"        FS on: {result['engine_eps'] / fs_np['engine_eps']:.0%} of the events/s of FS-NP")
            rows[label].append((n, result))
    for label, per_size in rows.items():
        if len(per_size) > 1:
            base = per_size[0][1]["us_per_admission"]
            for n, result in per_size[1:]:
                print(f"{label or 'plain'}: µs/admission at {n} CQs = {result['us_per_admission'] / base:.2f} × "
                      f"that at {per_size[0][0]} CQs")


if __name__ == "__main__":
    main()
