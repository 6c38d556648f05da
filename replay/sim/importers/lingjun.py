"""Importer for the Alibaba Lingjun 2023 (Crux, SIGCOMM'24) 3-tier Clos topology: nodes with their
switch labels and one ``Topology`` over them.

Source semantics: ``../shared/data/traces/node-inventories/README.md``.  ``topo.csv`` has the
columns ``ip,DSW,PSW,ASW``: a host (sha256-hashed IP) and its core (DSW), aggregation (PSW, a
spine) and top-of-rack (ASW) switch; 847 hosts, 1 DSW, 3 PSWs, 119 distinct (PSW, ASW) racks
(ASW names are reused under different PSWs).  The hosts are 8-GPU machines (the Crux paper);
the file gives no GPU count, CPU or memory.

Mapping (documented choices):

* one ``v1`` ``Node`` per row, named ``lingjun-`` + the first 12 hex digits of the hashed IP
  (unique over the file; checked), allocatable ``nvidia.com/gpu: 8`` (:data:`GPUS_PER_HOST`) and
  nothing else (the file gives nothing else);
* labels :data:`DSW_LABEL`, :data:`PSW_LABEL`, :data:`ASW_LABEL` = the switch names,
  :data:`POOL_LABEL` = ``lingjun`` and ``kubernetes.io/hostname`` = the node name;
* one ``Topology`` :data:`TOPOLOGY` with levels DSW → PSW → ASW → hostname, top level first
  (KAI and Kueue build domain ids from the values top-down, so ASW ``S14`` under ``P10`` and under
  ``P12`` are two racks, as in the network);
* one ResourceFlavor :data:`FLAVOR` selecting ``quotaledger.io/pool: lingjun``, with
  ``spec.topologyName: lingjun``.

A row with an empty field, or whose name collides with an earlier row's, is a bad row (skipped,
reported with its line number).
"""

from __future__ import annotations

from pathlib import Path

from replay.sim.importers.csvrows import iter_rows
from replay.sim.importers.inventory import (
    HOSTNAME_LABEL, NodeInventory, capacity_of, flavor_object, node_object, topology_object,
)
from replay.sim.importers.jobs import BadRow, TraceImportError

__all__ = ["FILE", "NAME", "TOPOLOGY", "FLAVOR", "LEVELS", "DSW_LABEL", "PSW_LABEL", "ASW_LABEL", "POOL_LABEL",
           "GPUS_PER_HOST", "read_topology"]

FILE = "alibaba-lingjun-2023_topo.csv"
NAME = "lingjun"
TOPOLOGY = "lingjun"
FLAVOR = "lingjun-gpu"
DSW_LABEL = "quotaledger.io/dsw"
PSW_LABEL = "quotaledger.io/psw"
ASW_LABEL = "quotaledger.io/asw"
POOL_LABEL = "quotaledger.io/pool"
LEVELS = (DSW_LABEL, PSW_LABEL, ASW_LABEL, HOSTNAME_LABEL)
"""Topology levels, top level first."""
GPUS_PER_HOST = 8
GPU = "nvidia.com/gpu"
NAME_DIGITS = 12
COLUMNS = ("ip", "DSW", "PSW", "ASW")


def read_topology(path: str | Path) -> NodeInventory:
    """Read ``topo.csv`` (the file, or a folder holding :data:`FILE`) into a
    :class:`~replay.sim.importers.inventory.NodeInventory` (module docstring).

    Raises:
        TraceImportError: the file cannot be read, lacks a column, or has no readable row.
    """
    path = Path(path)
    if path.is_dir():
        path = path / FILE
    nodes: list[dict] = []
    allocs: list[dict[str, int]] = []
    seen: dict[str, int] = {}
    bad: list[BadRow] = []
    for line, row in iter_rows(path, COLUMNS):
        values = {c: row[c].strip() for c in COLUMNS}
        empty = [c for c in COLUMNS if not values[c]]
        if empty:
            bad.append(BadRow(line, f"{empty[0]}: empty"))
            continue
        name = f"lingjun-{values['ip'][:NAME_DIGITS].lower()}"
        if name in seen:
            bad.append(BadRow(line, f"ip: node name {name} already taken by line {seen[name]}"))
            continue
        seen[name] = line
        alloc = {GPU: GPUS_PER_HOST}
        labels = {DSW_LABEL: values["DSW"], PSW_LABEL: values["PSW"], ASW_LABEL: values["ASW"], POOL_LABEL: NAME,
                  HOSTNAME_LABEL: name}
        nodes.append(node_object(name, labels, alloc))
        allocs.append(alloc)
    if not nodes:
        raise TraceImportError(f"{path}: no readable host row ({len(bad)} rows skipped)")
    return NodeInventory(NAME, nodes, [flavor_object(FLAVOR, {POOL_LABEL: NAME}, TOPOLOGY)],
                         capacity_of({FLAVOR: allocs}), [topology_object(TOPOLOGY, list(LEVELS))], bad)
