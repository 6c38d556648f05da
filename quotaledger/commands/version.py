"""``quotaledger version``: the distribution and engine versions."""

from __future__ import annotations

import typer


def version() -> None:
    """Print the distribution version and the engine version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    from statemodel.engine import ENGINE_VERSION

    try:
        dist = dist_version("quotaledger")
    except PackageNotFoundError:
        dist = "unknown"
    typer.echo(f"quotaledger {dist} (engine {ENGINE_VERSION})")
