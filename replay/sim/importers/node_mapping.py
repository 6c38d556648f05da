"""Generic CSV node lists read with a node mapping (YAML, validated with pydantic; no code).

The node-side twin of ``replay.sim.importers.mapping`` (same value specs, resource units and
``when`` conditions): a mapping says which column holds the node name, its allocatable
resources and its labels, which label selects a ResourceFlavor, and optionally the topology
levels.  User documentation with an example: ``docs/traces.md`` ("Node lists").  Shipped
examples: ``replay/sim/mappings/openb-nodes.yaml`` and ``lingjun-nodes.yaml``, which give the same
objects as the dedicated importers (``tests/unit/test_node_inventories.py`` checks it).  Schema::

    version: 1
    name: lab                               # the inventory's name
    delimiter: ","                          # optional
    node: {column: hostname}                # node name (made Kubernetes-safe); prefix, keep: N first chars
    allocatable:                            # per node; units as in a job mapping
      - {column: cores, resource: cpu, unit: cores}
      - {column: gpus, resource: nvidia.com/gpu, unit: count}
      - {value: 1, resource: example.com/nic, unit: count}   # a constant: the same on every node
    labels:                                 # optional; an empty cell leaves the label off ...
      - {label: quotaledger.io/gpu-model, column: model, empty: none}   # ... unless `empty` gives one
      - {label: example.com/rack, column: rack}
    flavor: {label: quotaledger.io/gpu-model, prefix: gpu-, map: {none: cpu-only}}
    topology: {name: lab, levels: [example.com/rack, kubernetes.io/hostname]}

``flavor``: one ResourceFlavor per value of that label (named ``map[value]``, else ``prefix`` +
the value made Kubernetes-safe), selecting its nodes by ``spec.nodeLabels``; a node without the
label is in no flavor.  Without ``flavor``: one flavor named like the inventory, selecting
``quotaledger.io/pool: <name>`` (a label every node then gets).  ``topology``: a ``Topology`` with
those levels, top level first, named by every flavor's ``spec.topologyName``; when its levels
name ``kubernetes.io/hostname`` and no label gives it, each node gets its name there.

A row that cannot be read (an empty name or amount, a bad number, a name already taken) is
skipped and reported with its line number; nothing is dropped silently.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from replay.sim.importers.csvrows import iter_rows
from replay.sim.importers.inventory import (
    HOSTNAME_LABEL, NodeInventory, capacity_of, flavor_object, node_object, topology_object,
)
from replay.sim.importers.jobs import BadRow, TraceImportError, bad_row_summary, slug
from replay.sim.importers.mapping import (
    RESOURCE_UNITS, Condition, MappingError, ValueSpec, condition_holds, is_empty, load_yaml_model, resource_amount,
    value_text,
)

__all__ = ["NodeMapping", "load_node_mapping", "import_nodes", "POOL_LABEL"]

POOL_LABEL = "quotaledger.io/pool"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NodeName(ValueSpec):
    """The node name: a value spec; ``keep`` keeps the first characters of the value, ``prefix``
    goes before it (a hashed 64-digit id → ``lingjun-`` + 12 digits); made Kubernetes-safe."""

    keep: int | None = Field(default=None, ge=1)


class NodeResource(_Model):
    """One allocatable resource of every node: a ``column`` or a constant ``value`` (a trace that
    does not list it: the Lingjun hosts' 8 GPUs), in ``unit``, times ``scale``, for the rows that
    pass ``when``; units as a job mapping's (``replay.sim.importers.mapping.RESOURCE_UNITS``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    column: str | None = None
    value: Decimal | None = Field(default=None, ge=0)
    resource: str = Field(min_length=1)
    unit: str
    scale: Decimal = Field(default=Decimal(1), ge=0)
    when: Condition | None = None

    @model_validator(mode="after")
    def _source_and_unit(self) -> "NodeResource":
        if (self.column is None) == (self.value is None):
            raise ValueError("give exactly one of column or value")
        if self.unit not in RESOURCE_UNITS:
            raise ValueError(f"unit {self.unit!r}: must be one of {', '.join(RESOURCE_UNITS)}")
        if (self.resource == "cpu") != (self.unit in ("cores", "millicores")):
            raise ValueError("cpu takes unit cores or millicores, and only cpu does")
        return self


class LabelColumn(ValueSpec):
    """A node label: its key ``label`` and a value spec; ``empty`` is the value for an empty cell
    (without it, the label is left off that node)."""

    label: str = Field(min_length=1)
    empty: str | None = None


class FlavorSpec(_Model):
    """Which label selects a ResourceFlavor, and how a value names it."""

    label: str = Field(min_length=1)
    prefix: str = ""
    map: dict[str, str] = Field(default_factory=dict)


class TopologySpec(_Model):
    """A ``Topology``: its name and levels (node labels, top level first, unique)."""

    name: str = Field(min_length=1)
    levels: list[str] = Field(min_length=1, max_length=16)

    @model_validator(mode="after")
    def _levels(self) -> "TopologySpec":
        if len(set(self.levels)) != len(self.levels):
            raise ValueError("levels must be unique")
        if HOSTNAME_LABEL in self.levels[:-1]:
            raise ValueError(f"{HOSTNAME_LABEL} may only be the last level")
        return self


class NodeMapping(_Model):
    """A validated node mapping (the module docstring gives every field's meaning)."""

    version: int = Field(default=1, ge=1, le=1)
    name: str = Field(min_length=1)
    delimiter: str = Field(default=",", min_length=1, max_length=1)
    node: NodeName
    allocatable: list[NodeResource] = Field(min_length=1)
    labels: list[LabelColumn] = Field(default_factory=list)
    flavor: FlavorSpec | None = None
    topology: TopologySpec | None = None

    @model_validator(mode="after")
    def _unique_labels(self) -> "NodeMapping":
        keys = [lc.label for lc in self.labels]
        if len(set(keys)) != len(keys):
            raise ValueError("labels: each label once")
        return self

    def columns(self) -> tuple[str, ...]:
        """Every column the mapping reads (all must be in the CSV header)."""
        cols = [s.column for s in (self.node, *self.labels) if s.column is not None]
        for rc in self.allocatable:
            if rc.column is not None:
                cols.append(rc.column)
            if rc.when is not None:
                cols.append(rc.when.column)
        return tuple(dict.fromkeys(cols))


def load_node_mapping(path: str | Path) -> NodeMapping:
    """Read and validate a node mapping YAML file.

    Raises:
        MappingError: unreadable file, not YAML, or invalid (every pydantic error, with its field path).
    """
    return load_yaml_model(path, NodeMapping, "node mapping")


def _read_row(m: NodeMapping, row: dict[str, str]) -> tuple[str, dict[str, str], dict[str, int]]:
    """``(name, labels, allocatable)`` of one row.

    Raises:
        ValueError: naming the column and the problem.
    """
    text = value_text(m.node, row, "node")
    if m.node.hash_buckets is None:
        text = m.node.prefix + text[: m.node.keep]
    name = slug(text)
    alloc: dict[str, int] = {}
    for rc in m.allocatable:
        if not condition_holds(rc.when, row):
            continue
        raw = str(rc.value) if rc.value is not None else row[rc.column].strip()  # type: ignore[index]
        amount = resource_amount(rc.column, raw, rc.unit, rc.scale)
        alloc[rc.resource] = alloc.get(rc.resource, 0) + amount
    labels: dict[str, str] = {}
    for lc in m.labels:
        if lc.column is not None and is_empty(row[lc.column].strip()):
            if lc.empty is not None:
                labels[lc.label] = lc.empty
            continue
        labels[lc.label] = value_text(lc, row, lc.label)
    if m.topology is not None and HOSTNAME_LABEL in m.topology.levels:
        labels.setdefault(HOSTNAME_LABEL, name)
    if m.flavor is None:
        labels[POOL_LABEL] = slug(m.name)
    return name, labels, alloc


def import_nodes(path: str | Path, mapping: NodeMapping | str | Path) -> NodeInventory:
    """Read a CSV node list with a node mapping (a :class:`NodeMapping` or its YAML file's path).

    Returns:
        a :class:`~replay.sim.importers.inventory.NodeInventory` named after the mapping: Nodes in
        file order, ResourceFlavors sorted by name, the Topology when the mapping gives one, bad
        rows.

    Raises:
        MappingError: the mapping is invalid; TraceImportError: the file cannot be read, lacks a
        column the mapping names, or has no readable row.
    """
    m = mapping if isinstance(mapping, NodeMapping) else load_node_mapping(mapping)
    topology = m.topology.name if m.topology is not None else None
    nodes: list[dict] = []
    groups: dict[str, list[dict[str, int]]] = {}
    selectors: dict[str, dict[str, str]] = {}
    seen: dict[str, int] = {}
    bad: list[BadRow] = []
    for line, row in iter_rows(path, m.columns(), m.delimiter):
        try:
            name, labels, alloc = _read_row(m, row)
            if name in seen:
                raise ValueError(f"{m.node.column or 'node'}: node name {name} already taken by line {seen[name]}")
        except ValueError as exc:
            bad.append(BadRow(line, str(exc)))
            continue
        seen[name] = line
        nodes.append(node_object(name, labels, alloc))
        if m.flavor is None:
            flavor, selector = slug(m.name), {POOL_LABEL: slug(m.name)}
        elif m.flavor.label in labels:
            value = labels[m.flavor.label]
            flavor, selector = m.flavor.map.get(value) or slug(m.flavor.prefix + value), {m.flavor.label: value}
        else:
            continue
        groups.setdefault(flavor, []).append(alloc)
        selectors[flavor] = selector
    if not nodes:
        raise TraceImportError(f"{path}: no readable node row: {bad_row_summary(bad)}")
    order = sorted(groups)
    return NodeInventory(slug(m.name), nodes, [flavor_object(f, selectors[f], topology) for f in order],
                         capacity_of({f: groups[f] for f in order}),
                         [topology_object(topology, list(m.topology.levels))] if m.topology is not None else [], bad)
