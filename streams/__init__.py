"""Kafka side of quotaledger: topics, codec, ingest loop, committer, dead letters, outbox relay, producer, dev broker."""
