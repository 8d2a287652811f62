"""ElectLeaders (43) v0-2, cluster mode only: the controller elects partitions' leaders (kbroker.cluster.election).

As Kafka's ZooKeeper-mode brokers answered it: ALTER on the cluster is needed (else
CLUSTER_AUTHORIZATION_FAILED for every partition and at the top); a broker that is not the controller
answers NOT_CONTROLLER for every partition (clients send it to the controller Metadata names, so this
happens only while the controller moves; Java's Admin reports it per partition, without a retry);
null partitions means every partition of the cluster, and then the partitions that needed no election are
left out of the answer (Kafka 4.3's controller answers so; the tools print nothing for them). Per partition: none (elected), ELECTION_NOT_NEEDED,
PREFERRED_LEADER_NOT_AVAILABLE (PREFERRED) or ELIGIBLE_LEADERS_NOT_AVAILABLE (UNCLEAN),
UNKNOWN_TOPIC_OR_PARTITION. The answer waits, up to timeout_ms, until this broker's metadata shows the
elected leaders (REQUEST_TIMED_OUT for those it does not show by then).

UNCLEAN elects only as far as unclean.leader.election.enable allows (false by default): a partition without a
live leader whose ISR has no live member gets ELIGIBLE_LEADERS_NOT_AVAILABLE, where Kafka (KIP-460) would
elect an out-of-sync replica anyway and lose the records only the ISR had.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.cluster.election import ElectionType, Outcome
from kbroker.cluster.metadata import ClusterMetadata
from kbroker.cluster.partition_moves import NotControllerError, UnknownPartitionError
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

TopicPartition = tuple[str, int]


@handles(ApiKey.ELECT_LEADERS, "0-2", cluster_only=True)
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    cluster = ctx.broker.cluster
    assert cluster is not None  # served in cluster mode only
    given = request["topic_partitions"]
    wanted: list[TopicPartition] | None = (
        None if given is None else list(dict.fromkeys((t["topic"], p) for t in given for p in t["partitions"]))
    )
    everything = [(t, p) for t, a in sorted(cluster.metadata.topics.items()) for p in sorted(a.partitions)]
    try:
        kind = ElectionType(request["election_type"] if ctx.api_version >= 1 else 0)
    except ValueError:
        return _response(ErrorCode.INVALID_REQUEST, {})
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER):
        error = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        return _response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, dict.fromkeys(wanted or [], error))
    try:
        outcomes = await cluster.moves.elect_leaders(kind, wanted)
    except NotControllerError:
        message = f"Broker {cluster.node_id} is not the controller."
        return _response(
            ErrorCode.NONE, dict.fromkeys(everything if wanted is None else wanted, (ErrorCode.NOT_CONTROLLER, message))
        )
    results: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
    elected = []
    unclean_allowed = str(ctx.broker.config.get_bool("unclean.leader.election.enable")).lower()
    strategy = (
        "PreferredReplicaPartitionLeaderElectionStrategy"
        if kind is ElectionType.PREFERRED
        else f"OfflinePartitionLeaderElectionStrategy({unclean_allowed})"
    )
    for (topic, partition), outcome in outcomes.items():
        if isinstance(outcome, UnknownPartitionError):
            results[(topic, partition)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(outcome))
        elif outcome is Outcome.ELECTED:
            results[(topic, partition)] = (ErrorCode.NONE, None)
            elected.append((topic, partition))
        elif outcome is Outcome.NOT_NEEDED and wanted is None:
            continue  # every partition asked for: only those an election concerned are answered, as Kafka 4.3
        elif outcome is Outcome.NOT_NEEDED:
            results[(topic, partition)] = (
                ErrorCode.ELECTION_NOT_NEEDED,
                "Leader election not needed for topic partition.",
            )
        else:
            code = (
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
                if kind is ElectionType.PREFERRED
                else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            )
            message = f"Failed to elect leader for partition {topic}-{partition} under strategy {strategy}"
            results[(topic, partition)] = (code, message)
    if elected and request["timeout_ms"] > 0:

        def shown(metadata: ClusterMetadata) -> bool:
            return all(_shows_election(metadata, kind, tp) for tp in elected)

        if not await cluster.wait_for(shown, request["timeout_ms"] / 1000):
            for tp in elected:
                if not _shows_election(cluster.metadata, kind, tp):
                    results[tp] = (ErrorCode.REQUEST_TIMED_OUT, "Timed out waiting for the election to show.")
    return _response(ErrorCode.NONE, results)


def _shows_election(metadata: ClusterMetadata, kind: ElectionType, tp: TopicPartition) -> bool:
    state, assignment = metadata.state(*tp), metadata.topics.get(tp[0])
    if state is None or assignment is None or not state.has_leader:
        return False
    return kind is ElectionType.UNCLEAN or state.leader == assignment.partitions[tp[1]][0]


def _response(error: ErrorCode, results: dict[TopicPartition, tuple[ErrorCode, str | None]]) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), (code, message) in results.items():
        by_topic.setdefault(topic, []).append(
            {"partition_id": partition, "error_code": int(code), "error_message": message}
        )
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "replica_election_results": [{"topic": t, "partition_result": r} for t, r in by_topic.items()],
    }
