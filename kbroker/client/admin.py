"""Topic and config administration, offsets and cluster facts (CreateTopics, DeleteTopics, DescribeConfigs,
IncrementalAlterConfigs, ListOffsets, DescribeCluster)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kbroker.client.cluster import Cluster, TopicInfo, check
from kbroker.client.connection import KafkaError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
EARLIEST = -2
LATEST = -1
OP_SET, OP_DELETE = 0, 1
CONFIG_SOURCES = {
    -1: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}
TIMEOUT_MS = 30000


def create_topic(
    cluster: Cluster, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
) -> dict[str, Any]:
    """Create one topic on the controller; its partitions, replication factor and topic id."""
    topic = {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": replication_factor,
        "configs": [{"name": k, "value": v} for k, v in configs.items()],
    }

    def attempt() -> dict[str, Any]:
        response = cluster.any_connection().call(ApiKey.CREATE_TOPICS, {"topics": [topic], "timeout_ms": TIMEOUT_MS})
        result = response["topics"][0]
        check(result["error_code"], f"create topic {name}", result["error_message"])
        return result

    result = cluster.retry(attempt)
    return {
        "topic": name,
        "partitions": result["num_partitions"] if result["num_partitions"] > 0 else partitions,
        "replication_factor": result["replication_factor"] if result["replication_factor"] > 0 else replication_factor,
    }


def delete_topic(cluster: Cluster, name: str) -> None:
    def attempt() -> None:
        conn = cluster.any_connection()
        version = conn.version(ApiKey.DELETE_TOPICS)
        body: dict[str, Any] = {"timeout_ms": TIMEOUT_MS}
        if version >= 6:
            body["topics"] = [{"name": name}]
        else:
            body["topic_names"] = [name]
        result = conn.call(ApiKey.DELETE_TOPICS, body, version)["responses"][0]
        check(result["error_code"], f"delete topic {name}", result["error_message"])

    cluster.retry(attempt)


def describe_configs(cluster: Cluster, resource_type: int, name: str) -> list[dict[str, Any]]:
    """Every config of a topic or broker: name, value, source, read-only, sensitive, default."""
    body = {
        "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": False,
    }

    def attempt() -> list[dict[str, Any]]:
        result = cluster.any_connection().call(ApiKey.DESCRIBE_CONFIGS, body)["results"][0]
        check(result["error_code"], f"describe configs of {name}", result["error_message"])
        return [
            {
                "name": c["name"],
                "value": None if c["is_sensitive"] else c["value"],
                "source": CONFIG_SOURCES.get(c["config_source"], str(c["config_source"])),
                "read_only": c["read_only"],
                "sensitive": c["is_sensitive"],
            }
            for c in sorted(result["configs"], key=lambda c: c["name"])
        ]

    return cluster.retry(attempt)


def alter_topic_configs(cluster: Cluster, topic: str, set_: Mapping[str, str], delete: Iterable[str]) -> None:
    """IncrementalAlterConfigs: SET each of `set_`, DELETE (back to the default) each of `delete`."""
    configs = [{"name": k, "config_operation": OP_SET, "value": v} for k, v in set_.items()]
    configs += [{"name": k, "config_operation": OP_DELETE, "value": None} for k in delete]
    body = {
        "resources": [{"resource_type": RESOURCE_TOPIC, "resource_name": topic, "configs": configs}],
        "validate_only": False,
    }

    def attempt() -> None:
        result = cluster.any_connection().call(ApiKey.INCREMENTAL_ALTER_CONFIGS, body)["responses"][0]
        check(result["error_code"], f"alter configs of {topic}", result["error_message"])

    cluster.retry(attempt)


def list_offsets(
    cluster: Cluster, topic: TopicInfo, partitions: Iterable[int], timestamp: int, isolation_level: int = 0
) -> dict[int, int]:
    """Partition -> the offset for `timestamp` (EARLIEST, LATEST, or ms: first offset at or after it, -1 if none)."""
    offsets: dict[int, int] = {}
    for leader, owned in cluster.leaders(topic, partitions).items():

        def attempt(leader: int = leader, owned: list[int] = owned) -> None:
            body = {
                "replica_id": -1,
                "isolation_level": isolation_level,
                "topics": [
                    {"name": topic.name, "partitions": [{"partition_index": p, "timestamp": timestamp} for p in owned]}
                ],
            }
            for t in cluster.connection(leader).call(ApiKey.LIST_OFFSETS, body)["topics"]:
                for p in t["partitions"]:
                    check(p["error_code"], f"list offsets of {topic.name}[{p['partition_index']}]")
                    offsets[p["partition_index"]] = p["offset"]

        cluster.retry(attempt)
    return offsets


def describe_topic(cluster: Cluster, name: str) -> dict[str, Any]:
    """Partitions (leader, replicas, ISR, log start and end offsets) and the topic's configs."""
    topic = cluster.topic(name)
    partitions = sorted(topic.partitions)
    starts = list_offsets(cluster, topic, partitions, EARLIEST)
    ends = list_offsets(cluster, topic, partitions, LATEST)
    return {
        "topic": name,
        "internal": topic.is_internal,
        "partitions": [
            {
                "partition": p,
                "leader": topic.partitions[p].leader,
                "replicas": topic.partitions[p].replicas,
                "isr": topic.partitions[p].isr,
                "log_start_offset": starts[p],
                "log_end_offset": ends[p],
            }
            for p in partitions
        ],
        "configs": describe_configs(cluster, RESOURCE_TOPIC, name),
    }


def list_topics(cluster: Cluster, include_internal: bool = False) -> list[dict[str, Any]]:
    topics = cluster.metadata(None)
    return [
        {"topic": t.name, "partitions": len(t.partitions), "internal": t.is_internal}
        for t in sorted(topics.values(), key=lambda t: t.name)
        if include_internal or not t.is_internal
    ]


def cluster_info(cluster: Cluster) -> dict[str, Any]:
    """Cluster id, controller and brokers (DescribeCluster when offered, else Metadata)."""
    conn = cluster.any_connection()
    cluster.metadata([])
    brokers = [{"node_id": n, "host": h, "port": p} for n, (h, p) in sorted(cluster.brokers.items())]
    info: dict[str, Any] = {"cluster_id": cluster.cluster_id, "controller_id": cluster.controller_id}
    if ApiKey.DESCRIBE_CLUSTER in conn.api_versions:
        response = conn.call(ApiKey.DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False})
        check(response["error_code"], "describe cluster", response["error_message"])
        info = {"cluster_id": response["cluster_id"], "controller_id": response["controller_id"]}
        brokers = [
            {"node_id": b["broker_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
            for b in sorted(response["brokers"], key=lambda b: b["broker_id"])
        ]
    info["brokers"] = brokers
    info["bootstrap"] = f"{conn.host}:{conn.port}"
    info["api_versions"] = {ApiKey(k).name if k in ApiKey._value2member_map_ else str(k): list(v)
                            for k, v in sorted(conn.api_versions.items())}  # fmt: skip
    return info


def unknown_topic(name: str) -> KafkaError:
    return KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, context=f"topic {name}")
