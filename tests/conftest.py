"""Test-session guard: the engine's hot modules may be compiled in place by mypyc (setup.py).

A compiled module shadows its ``.py`` source, so after editing ``statemodel/`` the tests would
silently run the old code.  Refuse to run instead, with the fix in the message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_sessionstart(session: pytest.Session) -> None:
    stale = []
    for compiled in sorted((ROOT / "statemodel").glob("*.so")):
        source = compiled.with_name(compiled.name.split(".", 1)[0] + ".py")
        if source.exists() and source.stat().st_mtime > compiled.stat().st_mtime:
            stale.append(source.name)
    if stale:
        raise pytest.UsageError(
            f"statemodel/{', '.join(stale)} changed after it was compiled; rebuild with "
            "`.venv/bin/pip install -q -e .` (or delete statemodel/*.so to run the pure-Python code)")
