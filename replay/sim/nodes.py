"""Node inventories for a simulation: finding one by name or path (``--nodes``), putting it under a
trace, and turning the engine's placement stage on (``--placement``).

Inventories (each a :class:`~replay.sim.importers.inventory.NodeInventory`):

* ``openb``: the openb node list, 1,523 nodes with their GPU models
  (``replay.sim.importers.openb.read_nodes``; one ResourceFlavor per model);
* ``lingjun``: the Lingjun 2023 3-tier Clos topology, 847 8-GPU hosts and a ``Topology``
  (``replay.sim.importers.lingjun``);
* a CSV file with a node mapping (``replay.sim.importers.node_mapping``, docs/traces.md).

The named ones are looked for as the named traces are (``replay.sim.traces.trace_dir``).  The
simulator applies a trace's Topologies (with the quota configuration, before the flavors that name
them) and then its Nodes before any workload (``replay.sim.simulator``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from replay.sim.importers.inventory import NodeInventory
from replay.sim.importers.jobs import BadRow, ImportResult, TraceImportError
from replay.sim.importers.lingjun import read_topology
from replay.sim.importers.node_mapping import import_nodes
from replay.sim.importers.openb import NODES_FILE as OPENB_NODES_FILE
from replay.sim.importers.openb import read_nodes as read_openb_nodes
from replay.sim.manifests import QuotaConfig
from replay.sim.traces import trace_dir

__all__ = ["NAMED", "load_nodes", "with_nodes", "enable_placement", "quota_only", "ENGINE_CONFIG_API"]

NAMED = ("openb", "lingjun")
"""Inventory names ``load_nodes`` knows."""
ENGINE_CONFIG_API = "quotaledger.io/v1alpha1"


def load_nodes(spec: str, mapping: str | Path | None = None) -> NodeInventory:
    """The node inventory ``spec``: a name of :data:`NAMED`, or a CSV file read with ``mapping``
    (a node mapping YAML).

    Raises:
        TraceImportError: not found, unreadable, no readable row, or a CSV without a mapping;
        MappingError: invalid node mapping.
    """
    if mapping is not None:
        path = Path(spec)
        if not path.is_file():
            raise TraceImportError(f"no such node list: {spec} (--node-mapping describes a CSV file)")
        return import_nodes(path, mapping)
    if spec == "openb":
        return read_openb_nodes(trace_dir("openb") / OPENB_NODES_FILE)
    if spec == "lingjun":
        return read_topology(trace_dir("lingjun"))
    raise TraceImportError(f"--nodes {spec}: not a known inventory ({', '.join(NAMED)}); "
                           "give a CSV file with --node-mapping (docs/traces.md)")


def with_nodes(trace: ImportResult, inventory: NodeInventory) -> ImportResult:
    """``trace`` on ``inventory``'s nodes: its Nodes, ResourceFlavors, capacity and Topologies replace
    the trace's own; the inventory's bad rows are added (prefixed ``nodes``).  The jobs are unchanged
    (a job naming a flavor the inventory lacks is the user's mismatch: its queue has no such flavor)."""
    return replace(trace, nodes=list(inventory.nodes), flavors=list(inventory.flavors),
                   capacity=dict(inventory.capacity), topologies=list(inventory.topologies),
                   bad_rows=trace.bad_rows + [BadRow(b.line, f"nodes: {b.message}") for b in inventory.bad_rows])


def enable_placement(config: QuotaConfig) -> QuotaConfig:
    """``config`` with the engine's placement stage on: ``EngineConfig`` ``spec.placement.enable:
    true`` (docs/placement.md), on the configuration's EngineConfig or a new one applied first.
    Every other object is kept as it is; a note says so."""
    objects = []
    found = False
    for obj in config.objects:
        if obj.get("kind") == "EngineConfig" and not found:
            found = True
            spec = dict(obj.get("spec") or {})
            spec["placement"] = {**(spec.get("placement") or {}), "enable": True}
            obj = {**obj, "spec": spec}
        objects.append(obj)
    if not found:
        objects.insert(0, {"apiVersion": ENGINE_CONFIG_API, "kind": "EngineConfig", "metadata": {"name": "config"},
                           "spec": {"placement": {"enable": True}}})
    return QuotaConfig(objects, config.root, [*config.notes, "placement on: EngineConfig spec.placement.enable: true "
                                                             "(workloads are placed on the nodes as gangs)"])


def quota_only(config: QuotaConfig) -> QuotaConfig:
    """``config`` of a pod-scheduling model (``koordinator``, ``volcano``, which place pods whenever
    the cluster has a Node) with placement off, unless its EngineConfig says otherwise:
    ``spec.placement.enable: false`` where ``enable`` is not given.  The demo and the simulator
    place only with ``--placement``, for every model; a translated tree's capacity Node (the whole
    nominal quota on one Node) is a quota device, not a machine."""
    objects = []
    for obj in config.objects:
        if obj.get("kind") == "EngineConfig":
            spec = dict(obj.get("spec") or {})
            placement = dict(spec.get("placement") or {})
            if "enable" not in placement:
                spec["placement"] = {**placement, "enable": False}
                obj = {**obj, "spec": spec}
        objects.append(obj)
    return QuotaConfig(objects, config.root, config.notes)
