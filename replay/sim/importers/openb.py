"""Importer for Alibaba ``cluster-trace-gpu-v2023`` ("openb": GPU-sharing pods and real nodes).

Source semantics: ``../shared/data/traces/alibaba-gpu-v2023-openb/README.md`` and the upstream
README.  Pods: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
creation_time,deletion_time,scheduled_time``, integer seconds from the trace start (0 …
12,902,960, about 149 days).  Nodes: ``sn,cpu_milli,memory_mib,gpu,model``.

Mapping (one pod → one :class:`~replay.sim.importers.jobs.Job`, one podSet, count 1):

* time base: trace second 0 is :data:`EPOCH_BASE_MS` (2023-01-01T00:00:00Z, a documented
  choice: the trace publishes offsets only).
* submit = ``creation_time``; observed start = ``scheduled_time``; run time =
  ``deletion_time − scheduled_time`` (the time the pod held its resources).
* empty ``scheduled_time`` (897 ``Pending`` pods): never started; ``run_ms = None`` and
  ``delete_ms = deletion_time``: the simulator withdraws it then if it is still pending (and ends
  it then if the simulated cluster did admit it).
* tenant path ``(tier, qos queue, user)``: ``LS`` → ``("online", "ls")``; ``BE`` →
  ``("batch", "be")``; ``Burstable`` and ``Guaranteed`` (107 pods) → ``("batch", "burstable")``,
  the queues the trace README suggests.  The trace has no user field: users are **synthesized**
  as :data:`USERS` stable hash buckets of the pod name (``u0`` … ``u7``, CRC-32 mod 8).
* flavor: ``None`` — the default list has no ``gpu_spec``, so any GPU model will do; the
  generated ClusterQueues list every node flavor.
* requests: ``cpu`` = ``cpu_milli`` millicores; ``memory`` = ``memory_mib`` × 2²⁰ bytes;
  GPUs in two resources: ``alibaba.com/gpu-milli`` is GPU capacity in thousandths
  (``gpu_milli`` for a one-GPU pod, ``num_gpu × 1000`` for a multi-GPU pod) and
  ``nvidia.com/gpu`` counts GPUs handed out whole (``num_gpu`` when ``gpu_milli == 1000``, 0 for
  a GPU-sharing pod).  A sharing pod thus costs ``gpu_milli`` of GPU quota, not a whole GPU.
* nodes (``openb_node_list_all_node.csv``): one ``v1`` ``Node`` per row with allocatable
  ``cpu``, ``memory``, ``nvidia.com/gpu`` and ``alibaba.com/gpu-milli`` (= GPUs × 1000) and the
  label ``quotaledger.io/gpu-model``; one ResourceFlavor per model (``gpu-t4``, ``gpu-v100m32``,
  …, ``cpu-only`` for nodes without a model) selecting that label.

Rows that cannot be read are returned as :class:`~replay.sim.importers.jobs.BadRow` and skipped.
"""

from __future__ import annotations

from pathlib import Path

from replay.sim.importers.csvrows import iter_rows, read_jobs
from replay.sim.importers.inventory import NodeInventory, capacity_of, flavor_object, node_object
from replay.sim.importers.jobs import (
    BadRow, ImportResult, Job, decimal_of, hash_bucket, slug, to_ms, to_units,
)

NAME = "openb"
PODS_FILE = "openb_pod_list_default.csv"
NODES_FILE = "openb_node_list_all_node.csv"
EPOCH_BASE_MS = 1_672_531_200_000
"""Trace second 0 = 2023-01-01T00:00:00Z (a documented choice)."""
USERS = 8
MIB = 1 << 20
MODEL_LABEL = "quotaledger.io/gpu-model"
CPU_ONLY = "cpu-only"
GPU = "nvidia.com/gpu"
GPU_MILLI = "alibaba.com/gpu-milli"

QOS_PATH = {"LS": ("online", "ls"), "BE": ("batch", "be"), "Burstable": ("batch", "burstable"),
            "Guaranteed": ("batch", "burstable")}
"""qos → (tier cohort, ClusterQueue)."""

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "qos", "creation_time", "deletion_time",
               "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


def user_of(name: str) -> str:
    """The synthesized user of a pod: ``u`` + CRC-32 bucket of its name (0 … 7)."""
    return f"u{hash_bucket(name, USERS)}"


def flavor_of_model(model: str) -> str:
    """ResourceFlavor name of a GPU model: ``gpu-<model>`` (``gpu-v100m32``), ``cpu-only`` if empty."""
    model = model.strip()
    return f"gpu-{slug(model)}" if model and model.lower() != "nan" else CPU_ONLY


def _int(row: dict[str, str], column: str, optional: bool = False) -> int | None:
    raw = row[column].strip()
    if raw == "" or raw.lower() == "nan":
        if optional:
            return None
        raise ValueError(f"{column}: empty")
    try:
        value = decimal_of(raw)
    except ValueError as exc:
        raise ValueError(f"{column}: {exc}") from None
    if value < 0:
        raise ValueError(f"{column}: must not be negative, got {raw!r}")
    return value  # type: ignore[return-value]


def gpu_requests(num_gpu: int, gpu_milli: int) -> list[tuple[str, int]]:
    """``nvidia.com/gpu`` and ``alibaba.com/gpu-milli`` of a pod (see the module docstring)."""
    out = []
    if gpu_milli == 1000 and num_gpu:
        out.append((GPU, num_gpu))
    milli = gpu_milli if num_gpu == 1 else num_gpu * 1000
    if milli:
        out.append((GPU_MILLI, milli))
    return out


def read_pod(line: int, row: dict[str, str]) -> Job:
    """One pod row → one job.

    Raises:
        ValueError: naming the column, when a value cannot be read, the qos is unknown or the
            times are out of order.
    """
    name = row["name"].strip()
    if not name:
        raise ValueError("name: empty")
    qos = row["qos"].strip()
    if qos not in QOS_PATH:
        raise ValueError(f"qos: unknown value {qos!r} (expected {', '.join(QOS_PATH)})")
    cpu = to_units(_int(row, "cpu_milli"), 1)  # type: ignore[arg-type]
    memory = to_units(_int(row, "memory_mib"), MIB)  # type: ignore[arg-type]
    num_gpu = to_units(_int(row, "num_gpu"), 1)  # type: ignore[arg-type]
    gpu_milli = to_units(_int(row, "gpu_milli"), 1)  # type: ignore[arg-type]
    requests = [(r, a) for r, a in (("cpu", cpu), ("memory", memory)) if a] + gpu_requests(num_gpu, gpu_milli)
    created = EPOCH_BASE_MS + to_ms(_int(row, "creation_time"), 1000)  # type: ignore[arg-type]
    deleted = EPOCH_BASE_MS + to_ms(_int(row, "deletion_time"), 1000)  # type: ignore[arg-type]
    sched = _int(row, "scheduled_time", optional=True)
    if sched is None:
        start, run, delete_ms = None, None, deleted
        if deleted < created:
            raise ValueError("deletion_time: earlier than creation_time")
    else:
        start = EPOCH_BASE_MS + to_ms(sched, 1000)
        if start < created:
            raise ValueError("scheduled_time: earlier than creation_time")
        if deleted < start:
            raise ValueError("deletion_time: earlier than scheduled_time")
        run, delete_ms = deleted - start, None
    return Job(name, created, run, (*QOS_PATH[qos], user_of(name)), 1, tuple(sorted(requests)), None,
               start, False, delete_ms, line)


def read_nodes(path: str | Path) -> NodeInventory:
    """Node list → a :class:`~replay.sim.importers.inventory.NodeInventory` named ``openb``: one
    Node per row (allocatable ``cpu``, ``memory``, ``nvidia.com/gpu``, ``alibaba.com/gpu-milli`` =
    GPUs × 1000; label :data:`MODEL_LABEL` = the model, ``none`` for a CPU-only node), one
    ResourceFlavor per model selecting that label, sorted ``cpu-only`` first, then by name; bad
    rows with their line numbers.  No topology: the trace publishes none.
    """
    nodes: list[dict] = []
    groups: dict[str, list[dict[str, int]]] = {}
    models: dict[str, str] = {}
    bad: list[BadRow] = []
    for line, row in iter_rows(path, NODE_COLUMNS):
        try:
            name = row["sn"].strip()
            if not name:
                raise ValueError("sn: empty")
            alloc = {"cpu": to_units(_int(row, "cpu_milli"), 1), "memory": to_units(_int(row, "memory_mib"), MIB)}  # type: ignore[arg-type]
            gpus = to_units(_int(row, "gpu"), 1)  # type: ignore[arg-type]
            flavor = flavor_of_model(row["model"])
        except ValueError as exc:
            bad.append(BadRow(line, str(exc)))
            continue
        alloc[GPU] = gpus
        alloc[GPU_MILLI] = gpus * 1000
        model = row["model"].strip() if flavor != CPU_ONLY else "none"
        models[flavor] = model
        groups.setdefault(flavor, []).append(alloc)
        nodes.append(node_object(slug(name), {MODEL_LABEL: model}, alloc))
    order = sorted(groups, key=lambda f: (f != CPU_ONLY, f))
    capacity = capacity_of({f: groups[f] for f in order})
    flavors = [flavor_object(f, {MODEL_LABEL: models[f]}) for f in order]
    return NodeInventory(NAME, nodes, flavors, capacity, [], bad)


def import_openb(path: str | Path, nodes_path: str | Path | None = None) -> ImportResult:
    """Read the openb pod list (a directory holding ``openb_pod_list_default.csv``, or the CSV
    itself) and, when present, the node list next to it (``openb_node_list_all_node.csv``).

    Returns:
        an :class:`ImportResult` named ``openb``: jobs in file order, bad rows of both files (node
        rows with their own line numbers, prefixed ``nodes``), span (start =
        :data:`EPOCH_BASE_MS`, end = the last time any pod mentions), Nodes, flavors, capacity.

    Raises:
        TraceImportError: unreadable file, missing column, or no readable pod.
    """
    from replay.sim.importers.dlrm import trace_end

    path = Path(path)
    pods_path = path / PODS_FILE if path.is_dir() else path
    if nodes_path is None:
        candidate = pods_path.parent / NODES_FILE
        nodes_path = candidate if candidate.exists() else None
    jobs, bad = read_jobs(pods_path, POD_COLUMNS, read_pod, "name")
    result = ImportResult(NAME, jobs, bad, EPOCH_BASE_MS, max(EPOCH_BASE_MS, trace_end(jobs)))
    if nodes_path is not None:
        inventory = read_nodes(nodes_path)
        result.nodes, result.flavors, result.capacity = inventory.nodes, inventory.flavors, inventory.capacity
        result.bad_rows += [BadRow(b.line, f"nodes: {b.message}") for b in inventory.bad_rows]
    return result
