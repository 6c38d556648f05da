"""Kueue quota manifests: load a user's directory of YAML (``kubectl get -o yaml`` style), write
generated ones, and answer the questions the simulator asks of a quota configuration.

Naming rule from a job's tenant path to queues (shared by the generator and the simulator, so a
user who edits the generated manifests keeps the names and the jobs still find their queues)::

    tenant = (l1, …, lk-1, group, tenant)      # outermost first
    cohorts      <root>, <root>-l1, <root>-l1-l2, …          (one per level above the group)
    ClusterQueue slug(l1-…-group)                            (a one-level path: slug(tenant))
    LocalQueue   namespace slug(tenant), name = the ClusterQueue's name
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from replay.sim.importers.jobs import Job, quantity_string, slug

__all__ = ["QuotaConfig", "QuotaConfigError", "load_manifests", "write_manifests", "queue_names", "KIND_ORDER"]

KIND_ORDER = ("EngineConfig", "Topology", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "ElasticQuota", "Queue", "Node")
"""Apply order of configuration kinds (a ClusterQueue's flavors and cohort exist before it, a
flavor's Topology before the flavor)."""
_FILES = {"EngineConfig": "00-engine-config.yaml", "Topology": "05-topologies.yaml", "ResourceFlavor": "10-resource-flavors.yaml",
          "Cohort": "20-cohorts.yaml", "ClusterQueue": "30-cluster-queues.yaml", "LocalQueue": "40-local-queues.yaml",
          "ElasticQuota": "50-elastic-quotas.yaml", "Queue": "55-volcano-queues.yaml", "Node": "60-nodes.yaml"}


class QuotaConfigError(ValueError):
    """A manifest directory cannot be used (unreadable, not YAML, an invalid object)."""


def queue_names(root: str, tenant: tuple[str, ...]) -> tuple[list[str], str, tuple[str, str]]:
    """``(cohort chain from the root down, ClusterQueue, (LocalQueue namespace, name))`` of a
    tenant path under root cohort ``root`` (see the module docstring)."""
    chain = [slug(root)] + [slug("-".join((root, *tenant[: i + 1]))) for i in range(len(tenant) - 2)]
    cq = slug("-".join(tenant[:-1])) if len(tenant) > 1 else slug(tenant[0])
    return chain, cq, (slug(tenant[-1]), cq)


@dataclass
class QuotaConfig:
    """A quota configuration: manifests in apply order plus the lookups the simulator needs.

    Attributes:
        objects: Kubernetes-shaped dicts (EngineConfig, ResourceFlavor, Cohort, ClusterQueue,
            LocalQueue) in :data:`KIND_ORDER`, each ready to be the ``object`` of an ``Applied`` event.
        root: the root cohort name used by :func:`queue_names`.
        notes: human-readable notes (the rule that generated it, files it came from, skipped objects).
    """

    objects: list[dict]
    root: str
    notes: list[str] = field(default_factory=list)
    _lq_cq: dict[tuple[str, str], str] = field(default_factory=dict, init=False, repr=False)
    _cq_groups: dict[str, list[tuple[list[str], list[str]]]] = field(default_factory=dict, init=False, repr=False)
    _leaves: set[str] = field(default_factory=set, init=False, repr=False)
    _volcano: bool = field(default=False, init=False, repr=False)

    @property
    def model(self) -> str:
        """The quota model the configuration is for: ``koordinator`` when it holds ElasticQuotas
        (jobs run as Pods labelled with their quota), ``volcano`` when it holds Volcano Queues (jobs
        run as PodGroups), else ``kueue``."""
        return "volcano" if self._volcano else "koordinator" if self._leaves else "kueue"

    def __post_init__(self) -> None:
        for o in self.objects:
            kind, meta, spec = o.get("kind"), o.get("metadata") or {}, o.get("spec") or {}
            if kind == "ElasticQuota":
                self._leaves.add(meta.get("name", ""))
            elif kind == "Queue":
                self._leaves.add(meta.get("name", ""))
                self._volcano = True
            elif kind == "LocalQueue":
                self._lq_cq[(meta.get("namespace", ""), meta.get("name", ""))] = spec.get("clusterQueue", "")
            elif kind == "ClusterQueue":
                groups = []
                for rg in spec.get("resourceGroups") or ():
                    groups.append((list(rg.get("coveredResources") or ()),
                                   [f.get("name") for f in rg.get("flavors") or ()]))
                self._cq_groups[meta.get("name", "")] = groups

    def local_queue(self, job: Job) -> tuple[str, str]:
        """``(namespace, name)`` of the LocalQueue a job is submitted to (naming rule)."""
        return queue_names(self.root, job.tenant)[2]

    def has_local_queue(self, lq: tuple[str, str]) -> bool:
        """Whether the configuration defines this LocalQueue (ElasticQuotas, Volcano Queues: the quota
        or queue named like it)."""
        return lq in self._lq_cq or lq[1] in self._leaves

    def admission(self, job: Job) -> dict | None:
        """Kueue ``status.admission`` for a job loaded as already running (pre-admitted), or
        ``None`` when its LocalQueue, ClusterQueue or a flavor for one of its resources is missing.

        Flavor per resource group: the job's own flavor when the group lists it, else the group's
        first flavor.  ``resourceUsage`` is the podSet total (count × per-pod), as Kueue.
        """
        cq = self._lq_cq.get(self.local_queue(job))  # none under ElasticQuotas: such jobs are submitted
        if cq is None or cq not in self._cq_groups:
            return None
        flavors: dict[str, str] = {}
        for res, _ in job.requests:
            for covered, names in self._cq_groups[cq]:
                if res in covered and names:
                    flavors[res] = job.flavor if job.flavor in names else names[0]
                    break
            else:
                return None
        return {"clusterQueue": cq, "podSetAssignments": [{
            "name": "main", "count": job.count, "flavors": flavors,
            "resourceUsage": {r: quantity_string(r, a) for r, a in job.total().items()}}]}


# --------------------------------------------------------------------------- loading


def _documents(path: Path) -> list[dict]:
    try:
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise QuotaConfigError(f"cannot read {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise QuotaConfigError(f"{path} is not valid YAML: {exc}") from exc
    out = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise QuotaConfigError(f"{path} document {i + 1}: not a mapping")
        if doc.get("kind") == "List" or (doc.get("kind", "").endswith("List") and "items" in doc):
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise QuotaConfigError(f"{path} document {i + 1}: items is not a list")
            out += [it for it in items if isinstance(it, dict)]
        else:
            out.append(doc)
    return out


def load_manifests(directory: str | Path, root: str) -> QuotaConfig:
    """Load every ``*.yaml`` / ``*.yml`` / ``*.json`` file of ``directory`` (sorted by name;
    multi-document files and ``kind: List`` with ``items`` accepted) into a :class:`QuotaConfig`.

    Objects of the kinds in :data:`KIND_ORDER` are kept, ordered by kind then by file order;
    ``metadata.managedFields`` is dropped; other kinds are skipped and named in ``notes``.  Each
    kept object is validated with ``statemodel.events.parse_event``.

    Args:
        directory: the manifest folder.
        root: root cohort name used to map tenant paths to LocalQueues (:func:`queue_names`).

    Raises:
        QuotaConfigError: not a directory, no manifest file, unreadable YAML, or an invalid object
            (message names the file and the field path).
    """
    from statemodel.errors import EventError
    from statemodel.events.decode import parse_event

    d = Path(directory)
    if not d.is_dir():
        raise QuotaConfigError(f"{d} is not a directory")
    files = sorted(p for p in d.iterdir() if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    if not files:
        raise QuotaConfigError(f"{d} has no .yaml, .yml or .json file")
    kept: list[tuple[int, int, dict]] = []
    notes = [f"quota configuration loaded from {d} ({len(files)} files)"]
    n = 0
    for path in files:
        for obj in _documents(path):
            kind = obj.get("kind")
            if kind not in KIND_ORDER:
                notes.append(f"skipped {kind or '(no kind)'} {((obj.get('metadata') or {}).get('name'))!r} in {path.name}")
                continue
            obj = dict(obj)
            if isinstance(obj.get("metadata"), dict):
                obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
            try:
                parse_event({"id": "check", "time": 0, "type": "Applied", "object": obj})
            except EventError as exc:
                name = (obj.get("metadata") or {}).get("name")
                raise QuotaConfigError(f"{path.name}: {kind} {name!r}: {exc.path}: {exc.problem}") from exc
            kept.append((KIND_ORDER.index(kind), n, obj))
            n += 1
    kept.sort(key=lambda t: (t[0], t[1]))
    return QuotaConfig([o for _, _, o in kept], slug(root), notes)


# --------------------------------------------------------------------------- writing


def write_manifests(config: QuotaConfig, directory: str | Path, header: str = "") -> list[Path]:
    """Write ``config`` as one ``kind: List`` YAML file per kind (``00-engine-config.yaml`` …
    ``40-local-queues.yaml``), each starting with ``header`` as ``#`` comments; creates the
    directory.  :func:`load_manifests` reads them back to the same objects.  Returns the paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    written = []
    for kind in KIND_ORDER:
        items = [o for o in config.objects if o.get("kind") == kind]
        if not items:
            continue
        body = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, sort_keys=False,
                              default_flow_style=False, width=120)
        path = d / _FILES[kind]
        path.write_text(comment + body, encoding="utf-8")
        written.append(path)
    return written
