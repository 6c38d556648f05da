"""The pure, deterministic core of quotaledger: events, quota hierarchy, admission, state hash (no I/O)."""
