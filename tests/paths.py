"""Paths the tests read: the repository root and the shipped data beside it."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
EXAMPLE = ROOT / "replay" / "examples" / "two-teams.ndjson"
MAPPINGS = ROOT / "replay" / "sim" / "mappings"
