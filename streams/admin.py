"""Topic administration: create quotaledger's topics when they are missing (aiokafka admin client).

Used by ``quotaledger produce``; ``docker-compose.yml`` creates the same topics with Kafka's own
``kafka-topics.sh``.  Topics that already exist are left as they are (their partition count is
reported, never changed: re-partitioning would move clusters between partitions).
"""

from __future__ import annotations

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from streams.topics import Topics

TOPIC_ALREADY_EXISTS = 36
"""Kafka protocol error code of CreateTopics for a topic that exists."""


class TopicAdminError(RuntimeError):
    """The topics could not be created or described; the message names the topic and the broker's reason."""


async def ensure_topics(bootstrap: str, topics: Topics, partitions: int, replication_factor: int = 1,
                        timeout_ms: int = 30_000) -> dict[str, int]:
    """Create ``topics.events``, ``topics.decisions`` and ``topics.dlq`` where missing.

    Args:
        bootstrap: ``host:port[,host:port…]``.
        topics: the topic names (prefix).
        partitions: partition count of topics created now (>= 1).
        replication_factor: replication factor of topics created now (>= 1; 1 on a single broker).
        timeout_ms: request timeout in ms.

    Returns:
        ``{topic name: partition count}`` of the three topics as they are afterwards.

    Raises:
        TopicAdminError: the broker cannot be reached, or refused to create a topic (other than
            because it already exists).
    """
    names = [topics.events, topics.decisions, topics.dlq]
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=timeout_ms)
    try:
        await admin.start()
        response = await admin.create_topics([NewTopic(n, partitions, replication_factor) for n in names],
                                             timeout_ms=timeout_ms)
        for name, code, message in response.topic_errors:
            if code not in (0, TOPIC_ALREADY_EXISTS):
                raise TopicAdminError(f"cannot create topic {name!r} on {bootstrap}: error {code} {message or ''}")
        described = await admin.describe_topics(names)
    except KafkaError as exc:
        raise TopicAdminError(f"cannot create topics on {bootstrap}: {exc!r}") from None
    finally:
        await admin.close()
    counts = {d["topic"]: len(d["partitions"]) for d in described if d["error_code"] == 0}
    missing = [n for n in names if not counts.get(n)]
    if missing:
        raise TopicAdminError(f"topics {', '.join(missing)} are not available on {bootstrap} after creation")
    return counts
