"""Finding and importing a trace by name (``dlrm``, ``openb``) or path, and reading ``--until``.

Where a named trace is found, first match wins: ``$QUOTALEDGER_TRACES/<folder>``, then
``shared/data/traces/<folder>`` beside the repository (found from the working directory or this
package upwards), then — for ``dlrm`` only — the gzipped copy shipped inside the package (``replay/traces_data/``, with its README:
source, commit, terms, citation).  openb is not shipped: its terms ask that it not be
redistributed as part of a product.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

from replay.sim.gangs import NAME as GANGS
from replay.sim.gangs import gang_trace
from replay.sim.importers.dlrm import FILE as DLRM_FILE
from replay.sim.importers.dlrm import import_dlrm
from replay.sim.importers.jobs import ImportResult, TraceImportError
from replay.sim.importers.lingjun import read_topology
from replay.sim.importers.mapping import import_csv
from replay.sim.importers.openb import PODS_FILE as OPENB_FILE
from replay.sim.importers.openb import import_openb

__all__ = ["SHIPPED", "INVENTORIES", "PACKAGED", "trace_dir", "load_trace"]

SHIPPED = {"dlrm": "alibaba-gpu-v2025-dlrm", "openb": "alibaba-gpu-v2023-openb"}
"""Trace names → folder under the shared traces directory."""

INVENTORIES = {"lingjun": "node-inventories"}
"""Node inventory names (``replay.sim.nodes``) whose data sits in a folder of its own → that folder."""

PACKAGED = ("dlrm",)
"""Named traces whose data ships inside the package (``replay/traces_data/<folder>``)."""


def _beside_repository() -> Path | None:
    """The first ``shared/data/traces`` next to an ancestor of the working directory or of this
    package (the repository sits beside ``shared/``), or ``None``."""
    for base in (Path.cwd().resolve(), Path(__file__).resolve().parent):
        for a in (base, *base.parents):
            candidate = a / "shared" / "data" / "traces"
            if candidate.is_dir():
                return candidate
    return None


def trace_dir(name: str) -> Path:
    """The folder of the named trace ``name`` (a key of :data:`SHIPPED` or :data:`INVENTORIES`), in
    the lookup order of the module docstring.

    Raises:
        TraceImportError: not found anywhere; the message says where it was looked for.
    """
    folder = SHIPPED[name] if name in SHIPPED else INVENTORIES[name]
    candidates = []
    env = os.environ.get("QUOTALEDGER_TRACES")
    if env:
        candidates.append(Path(env) / folder)
    shared = _beside_repository()
    if shared is not None:
        candidates.append(shared / folder)
    if name in PACKAGED:
        candidates.append(Path(str(files("replay.sim").joinpath("traces_data", folder))))
    for path in candidates:
        if path.is_dir():
            return path
    where = ", ".join(str(p) for p in candidates) or "shared/data/traces beside the repository"
    shipped = "" if name in PACKAGED else (
        f"; the {name} trace is not shipped with quotaledger (its terms ask that it not be redistributed as "
        f"part of a product): put its folder {folder}/ under $QUOTALEDGER_TRACES or shared/data/traces/ "
        "beside the repository")
    raise TraceImportError(f"cannot find the {name} trace (looked in {where}){shipped}")


def load_trace(spec: str, mapping: str | Path | None = None) -> ImportResult:
    """Import a trace.

    Args:
        spec: ``dlrm`` or ``openb`` (the shipped traces, see :data:`SHIPPED`), ``gangs`` (the
            generated gang mix on the Lingjun topology, ``replay.sim.gangs``), or a path: a CSV
            file (read with ``mapping``), or a folder / file of one of the two Alibaba layouts.
        mapping: a mapping YAML (``replay.sim.importers.mapping``); required for other CSV files.
            With a shipped name it replaces the dedicated importer (same jobs, no nodes).

    Raises:
        TraceImportError: the trace cannot be found or read; MappingError: invalid mapping.
    """
    if spec == GANGS and mapping is None:
        return gang_trace(read_topology(trace_dir("lingjun")))
    path = trace_dir(spec) if spec in SHIPPED else Path(spec)
    if not path.exists():
        raise TraceImportError(f"no such trace: {spec}")
    if mapping is not None:
        if path.is_dir():
            found = [p for p in (path / DLRM_FILE, path / f"{DLRM_FILE}.gz", path / OPENB_FILE) if p.exists()]
            if not found:
                raise TraceImportError(f"{path} is a folder: give the CSV file to read with --mapping")
            path = found[0]
        return import_csv(path, mapping)
    dlrm_names = (DLRM_FILE, f"{DLRM_FILE}.gz")
    if (path.is_dir() and any((path / n).exists() for n in dlrm_names)) or path.name in dlrm_names:
        return import_dlrm(path)
    if (path.is_dir() and (path / OPENB_FILE).exists()) or path.name == OPENB_FILE:
        return import_openb(path)
    raise TraceImportError(f"{path}: not a known trace layout; give --mapping FILE to read it")
