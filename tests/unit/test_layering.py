"""The layering of DESIGN.md "Layout": the import-linter contracts of pyproject.toml hold, each of
them catches the import it exists to forbid, and no module of ours imports itself through others.

The contracts run through import-linter's Python API on the real import graph (``lint-imports``
in the venv runs the same ones).  The cycle check builds the graph with grimp (which import-linter
uses) without the imports under ``if TYPE_CHECKING:`` — they never run — and looks for strongly
connected components of the module graph: any component of more than one module (or a module that
imports itself) is a cycle.
"""

from __future__ import annotations

import copy

import grimp
import pytest
from importlinter.api import read_configuration
from importlinter.application.use_cases import lint_imports
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.independence import IndependenceContract
from importlinter.contracts.layers import LayersContract
from importlinter.domain.contract import Contract

from tests.paths import ROOT

PYPROJECT = ROOT / "pyproject.toml"
CONFIG = read_configuration(str(PYPROJECT))
ROOTS = tuple(CONFIG["session_options"]["root_packages"])
_TYPES: dict[str, type[Contract]] = {"forbidden": ForbiddenContract, "layers": LayersContract,
                                     "independence": IndependenceContract}

def _contract(name_start: str) -> Contract:
    """The contract of pyproject.toml whose name starts with ``name_start``."""
    for options in CONFIG["contracts_options"]:
        if options["name"].startswith(name_start):
            return _TYPES[options["type"]](name=options["name"], session_options=CONFIG["session_options"],
                                           contract_options=dict(options))
    raise LookupError(name_start)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    """The import graph the contracts are checked on (external packages as single nodes)."""
    return grimp.build_graph(*ROOTS, include_external_packages=True, cache_dir=None)


def test_every_contract_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    kept = lint_imports(str(PYPROJECT), cache_dir=None, no_logo=True)
    report = capsys.readouterr().out
    assert kept, report  # the report names each broken contract and the imports that break it
    assert f"Contracts: {len(CONFIG['contracts_options'])} kept, 0 broken." in report


@pytest.mark.parametrize(("contract", "importer", "imported"), [
    ("layers", "statemodel.engine", "replay.store.db"),
    ("layers", "replay.store.archive", "quotaledger.cli"),
    ("layers", "migrations.env", "streams.codec"),
    ("nothing of ours imports the tests", "replay.verify", "tests.paths"),
    ("the pure core does no I/O", "statemodel.events.decode", "aiokafka"),
    ("the live path", "streams.ingest_store", "replay.runner"),
    ("the live path", "streams.producer", "replay.ndjson"),
    ("the SQL store", "replay.store.archive", "replay.runner"),
    ("the SQL store", "replay.store.restore", "streams.codec"),
    ("the command line", "quotaledger.views.display", "quotaledger.commands.store"),
    ("the command line", "quotaledger.commands.store", "quotaledger.cli"),
    ("the engine reaches a quota model only through the seam", "statemodel.admission.cycle", "statemodel.quota.kueue"),
    ("the engine reaches a quota model only through the seam", "statemodel.hierarchy", "statemodel.quota.kueue"),
])
def test_a_forbidden_import_breaks_its_contract(graph: grimp.ImportGraph, contract: str, importer: str,
                                                imported: str) -> None:
    checked = _contract(contract)
    assert checked.check(copy.deepcopy(graph), verbose=False).kept  # a check removes ignored imports
    changed = copy.deepcopy(graph)
    changed.add_import(importer=importer, imported=imported)
    assert not checked.check(changed, verbose=False).kept


def test_the_live_path_may_use_the_store(graph: grimp.ImportGraph) -> None:
    checked = _contract("the live path")
    changed = copy.deepcopy(graph)
    changed.add_import(importer="streams.outbox", imported="replay.store.restore")
    assert checked.check(changed, verbose=False).kept


def test_quota_models_are_independent(graph: grimp.ImportGraph) -> None:
    checked = _contract("quota models")
    changed = copy.deepcopy(graph)
    changed.add_module("statemodel.quota.flat")
    changed.add_import(importer="statemodel.quota.flat", imported="statemodel.quota.kueue")
    checked.contract_options["modules"] = [*checked.contract_options["modules"], "statemodel.quota.flat"]
    with_flat = type(checked)(name=checked.name, session_options=checked.session_options,
                              contract_options=checked.contract_options)
    assert not with_flat.check(changed, verbose=False).kept


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of a directed graph: its strongly connected components of more than one node, and
    nodes with an edge to themselves (Tarjan's algorithm, iterative), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in edges[node]:
                        found.append(sorted(component))
    return sorted(found)


def test_cycle_finder_finds_cycles_and_only_cycles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"], ["e"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_ours_imports_itself_through_others() -> None:
    graph = grimp.build_graph(*ROOTS, exclude_type_checking_imports=True, cache_dir=None)
    edges = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    assert _cycles(edges) == []
