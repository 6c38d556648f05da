"""Events as values: the envelope, decoding and validation of NDJSON records (docs/events.md)."""
