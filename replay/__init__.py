"""Offline side of quotaledger: event sources (NDJSON files), the replay runner, shipped examples."""
