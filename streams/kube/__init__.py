"""The Kubernetes source of ``quotaledger watch``: list + watch a cluster's objects and turn them into
events of the contract (docs/events.md).

- ``kinds``: the table of watched kinds (one entry per kind);
- ``translate``: pure functions from a watch event (and the previously known object) to envelopes,
  with the id and time rules;
- ``state``: the resume file (last resourceVersion and last known objects per kind);
- ``sink``: where the event lines go (NDJSON file / stdout, or the Kafka events topic);
- ``watcher``: the I/O — the official ``kubernetes`` client, a thread per watched kind.
"""
