"""The resume file of ``quotaledger watch`` (``--state FILE``): per watched kind the last
resourceVersion and the last known objects, and the cluster's event clock.

The objects are kept so that a ``410 Gone`` relist, or a restart, can tell what changed (the
differences become one ``Batch``) and so that a Workload's status transitions are seen against its
previous version.  The file is JSON, written whole to a temporary file that is then renamed over
it (``os.replace``), so a crash leaves the previous complete file.  It is written only after the
events it accounts for were flushed to the output: after a crash the watch resumes from an earlier
point and re-sends events whose ids the engine already holds (duplicates, never applied twice).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson

FORMAT = 1


class StateFileError(ValueError):
    """The state file cannot be read, or belongs to another cluster (the message names the file)."""


@dataclass
class KindState:
    """What is known of one kind.

    Attributes:
        resource_version: where the watch resumes (``None``: list first).
        objects: object key (``ns/name`` or ``name``) → last known object.
        version: the API version the kind was listed at (``None`` before its first list).
    """

    resource_version: str | None = None
    objects: dict[str, dict] = field(default_factory=dict)
    version: str | None = None


@dataclass
class WatchState:
    """The whole resume state of one cluster.

    Attributes:
        cluster: the cluster name it belongs to.
        clock_ms: the time of the last event sent (ms since the epoch).
        kinds: ``KindSpec.name`` → ``KindState``.
    """

    cluster: str
    clock_ms: int = 0
    kinds: dict[str, KindState] = field(default_factory=dict)

    def kind(self, name: str) -> KindState:
        """The state of kind ``name``, created empty when absent."""
        return self.kinds.setdefault(name, KindState())


def load(path: Path, cluster: str) -> WatchState:
    """The state in ``path``, or an empty state for ``cluster`` when the file does not exist.

    Raises:
        StateFileError: unreadable, not a state file of this format, or of another cluster.
    """
    try:
        raw = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return WatchState(cluster)
    except (OSError, orjson.JSONDecodeError) as exc:
        raise StateFileError(f"state file {path}: cannot be read: {exc}") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or not isinstance(raw.get("kinds"), dict):
        raise StateFileError(f"state file {path}: not a quotaledger watch state file (format {FORMAT})")
    if raw.get("cluster") != cluster:
        raise StateFileError(f"state file {path}: belongs to cluster {raw.get('cluster')!r}, not {cluster!r}")
    state = WatchState(cluster, int(raw.get("clockMs", 0)))
    for name, kind in raw["kinds"].items():
        rv, version = kind.get("resourceVersion"), kind.get("version")
        state.kinds[name] = KindState(rv if isinstance(rv, str) else None, dict(kind.get("objects") or {}),
                                      version if isinstance(version, str) else None)
    return state


def save(path: Path, state: WatchState) -> None:
    """Write ``state`` to ``path`` atomically (temporary file, fsync, rename).

    Raises:
        OSError: the directory is not writable or the disk is full (the old file stays).
    """
    doc = {"format": FORMAT, "cluster": state.cluster, "clockMs": state.clock_ms,
           "kinds": {name: {"resourceVersion": k.resource_version, "version": k.version, "objects": k.objects}
                     for name, k in sorted(state.kinds.items())}}
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(orjson.dumps(doc))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
