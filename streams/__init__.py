"""Kafka side of quotaledger: topics, codec, ingest loop, dead letters, outbox (arrives with the Kafka issue)."""
