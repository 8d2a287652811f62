"""The controller mutation quota as the topic admin handlers apply it (KIP-599, kbroker.quota)."""

from __future__ import annotations

from kbroker.context import RequestContext

THROTTLED_MESSAGE = "The throttling quota has been exceeded."


def mutation_refused(ctx: RequestContext, partitions: int, *, strict_since: int) -> bool:
    """Account `partitions` created or deleted; True when the request version is strict (Kafka:
    CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) and the client's bucket is in debt."""
    quotas = ctx.broker.quotas
    if quotas is None:
        return False
    return quotas.mutation(ctx, partitions, strict=ctx.api_version >= strict_since) is not None
