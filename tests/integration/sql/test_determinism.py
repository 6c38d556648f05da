"""Determinism: decisions and the hash chain are pure functions of the event sequence.

* the same event file twice → byte-identical decisions (NDJSON) and the same hash;
* the same events with a different JSON key order and whitespace → the same hash (the chain is built
  over canonical JSON, statemodel/engine.py);
* changing one event → a different hash.
"""

from __future__ import annotations

import json
import random

import orjson

from statemodel.engine import Engine
from statemodel.events.decode import decode_event
from tests.scenario.builder import GPU, Scenario


def story() -> list[dict]:
    """A small but busy history: a 3-level tree, two flavors, borrowing, a batch, evictions, finishes."""
    s = Scenario(cluster="prod")
    s.flavor("on-demand")
    s.flavor("spot")
    s.cohort("root")
    s.cohort("org", parent="root", groups=[{"on-demand": {"cpu": ("2", "4", None)}, "spot": {"cpu": ("0", None, "2")}}])
    s.cq("a", cohort="org", groups=[{"on-demand": {"cpu": "4"}, "spot": {"cpu": ("4", None, "2")}},
                                    {"gpu-flavor": {GPU: 2}}], when_can_borrow="TryNextFlavor")
    s.flavor("gpu-flavor")
    s.cq("b", cohort="root", quotas={"cpu": "6"}, flavor="on-demand", strategy="StrictFIFO")
    s.lq("team-a/q", "a")
    s.lq("team-b/q", "b")
    for i in range(8):
        s.submit(f"team-a/w{i}", "q", cpu=str(1 + i % 3), gpu="1" if i % 4 == 0 else None, priority=i % 2)
        s.submit(f"team-b/w{i}", "q", cpu=str(2 + i % 2))
    with s.batch():
        s.finish("team-a/w0")
        s.submit("team-a/late", "q", cpu="2", priority=5)
    s.evict("team-b/w0")
    s.finish("team-b/w1")
    s.tick()
    s.delete_cohort("org")
    s.finish("team-a/w1")
    return s.events


def replay(lines: list[bytes]) -> tuple[bytes, str]:
    """Decode each line (the NDJSON path), apply; returns (decisions NDJSON, final hash)."""
    engine = Engine()
    out = []
    for line in lines:
        for d in engine.apply(decode_event(line)):
            out.append(orjson.dumps(d.to_json()) + b"\n")
    return b"".join(out), engine.hash


def ndjson(events: list[dict]) -> list[bytes]:
    return [orjson.dumps(e) for e in events]


def shuffled_keys(value, rng: random.Random):
    """The same JSON value with every object's keys in a random order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled_keys(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled_keys(v, rng) for v in value]
    return value


def test_same_file_twice_gives_identical_decisions_and_hash(tmp_path):
    path = tmp_path / "events.ndjson"
    path.write_bytes(b"\n".join(ndjson(story())) + b"\n")
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    decisions1, hash1 = replay(lines)
    decisions2, hash2 = replay(lines)
    assert decisions1 and decisions1 == decisions2
    assert hash1 == hash2
    seqs = [orjson.loads(line)["seq"] for line in decisions1.splitlines()]
    assert seqs == list(range(1, len(seqs) + 1))


def test_key_order_and_whitespace_do_not_change_the_hash():
    events = story()
    rng = random.Random(7)
    plain = ndjson(events)
    pretty = [json.dumps(shuffled_keys(e, rng), indent=rng.choice([None, 1, 4]), separators=(" , ", " : "))
              .replace("\n", " ").encode() for e in events]
    assert plain != pretty
    decisions_a, hash_a = replay(plain)
    decisions_b, hash_b = replay(pretty)
    assert hash_a == hash_b
    assert decisions_a == decisions_b


def test_changing_one_event_changes_the_hash():
    events = story()
    decisions, base = replay(ndjson(events))
    # Same decisions, different event (a Tick half a second later): the chain covers the events themselves.
    changed_tick = json.loads(json.dumps(events))
    [i] = [k for k, e in enumerate(changed_tick) if e["type"] == "Tick"]
    changed_tick[i]["time"] = changed_tick[i]["time"].replace("Z", ".500Z")
    decisions_t, other = replay(ndjson(changed_tick))
    assert decisions_t == decisions
    assert other != base
    # A change that alters decisions: one more cpu on the first workload.
    changed_wl = json.loads(json.dumps(events))
    [j] = [k for k, e in enumerate(changed_wl)
           if e["type"] == "Applied" and e["object"]["kind"] == "Workload"][:1]
    changed_wl[j]["object"]["spec"]["podSets"][0]["requests"]["cpu"] = "3"
    decisions_c, third = replay(ndjson(changed_wl))
    assert decisions_c != decisions
    assert third != base


def test_duplicate_ids_do_not_enter_the_chain():
    events = story()
    lines = ndjson(events)
    decisions, h = replay(lines)
    with_dups = lines[:5] + [lines[2], lines[4]] + lines[5:]
    decisions_d, h_d = replay(with_dups)
    assert (decisions_d, h_d) == (decisions, h)
