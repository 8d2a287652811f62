"""/metrics: the broker's state in Prometheus' text format, gathered at scrape time.

Nothing here runs per request: request counts and latency come from RequestStats (filled by the
pipeline's hook), bytes in from TopicTraffic (the logs' on_append event); partitions, log sizes,
offsets, group lag, share-group backlog and, in a cluster, the replication of the partitions this
broker leads are read from the broker's state when scraped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from kbroker.http.request_stats import BUCKETS, RequestStats
from kbroker.http.traffic import TopicTraffic
from protocol.api_keys import api_name

if TYPE_CHECKING:
    from kbroker.broker import Broker

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_BOUNDS = [repr(b) for b in BUCKETS] + ["+Inf"]


class BrokerCollector(Collector):
    def __init__(self, broker: Broker, requests: RequestStats, traffic: TopicTraffic, connections: Any) -> None:
        self.broker = broker
        self.requests = requests
        self.traffic = traffic
        self.connections = connections  # ConnectionLimits: .connections is the set of open ones

    def collect(self) -> Iterator[Any]:
        yield from self._requests()
        yield from self._logs()
        yield from self._groups()
        yield from self._share_groups()
        yield from self._replication()
        conns = GaugeMetricFamily("kbroker_connections", "Open Kafka-protocol client connections.")
        conns.add_metric([], len(self.connections.connections))
        yield conns

    def _requests(self) -> Iterator[Any]:
        total = CounterMetricFamily("kbroker_requests", "Kafka requests answered, per API.", labels=["api"])
        latency = HistogramMetricFamily(
            "kbroker_request_duration_seconds",
            "Time from a request's decoding to its answer being ready, per API.",
            labels=["api"],
        )
        for key, entry in sorted(self.requests.apis.items()):
            name = _request_name(key)
            total.add_metric([name], entry.count)
            latency.add_metric([name], list(zip(_BOUNDS, entry.cumulative(), strict=True)), entry.total)
        yield total
        yield latency

    def _logs(self) -> Iterator[Any]:
        topics = self.broker.logs.topics()
        partitions = GaugeMetricFamily("kbroker_topic_partitions", "Partitions per topic.", labels=["topic"])
        for name, metadata in sorted(topics.items()):
            partitions.add_metric([name], metadata.partitions)
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kbroker_log_size_bytes", "Bytes of a partition's log on disk.", labels=labels)
        end = GaugeMetricFamily("kbroker_log_end_offset", "A partition's log end offset.", labels=labels)
        start = GaugeMetricFamily("kbroker_log_start_offset", "A partition's log start offset.", labels=labels)
        for (topic, index), unified in sorted(self.broker.logs.partitions()):
            local = unified.local
            key = [topic, str(index)]
            size.add_metric(key, local.size_in_bytes)
            end.add_metric(key, local.log_end_offset)
            start.add_metric(key, local.log_start_offset)
        bytes_in = CounterMetricFamily(
            "kbroker_topic_bytes_in", "Record batch bytes appended per topic since start.", labels=["topic"]
        )
        records_in = CounterMetricFamily(
            "kbroker_topic_records_in", "Records appended per topic since start.", labels=["topic"]
        )
        bytes_out = CounterMetricFamily(
            "kbroker_topic_bytes_out", "Record batch bytes answered to Fetch requests per topic.", labels=["topic"]
        )
        self.traffic.forget(set(topics))
        for topic, count in sorted(self.traffic.bytes_in.items()):
            bytes_in.add_metric([topic], count)
            records_in.add_metric([topic], self.traffic.records_in[topic])
        out = self.requests.bytes_out
        for gone in [topic for topic in out if topic not in topics]:
            del out[gone]
        for topic, count in sorted(out.items()):
            bytes_out.add_metric([topic], count)
        yield from (partitions, size, end, start, bytes_in, records_in, bytes_out)

    def _groups(self) -> Iterator[Any]:
        from kbroker.group import group_runtime
        from protocol.errors import KafkaProtocolError

        lag = GaugeMetricFamily(
            "kbroker_consumer_group_lag",
            "High watermark minus the group's committed offset, per partition.",
            labels=["group", "topic", "partition"],
        )
        members = GaugeMetricFamily("kbroker_consumer_group_members", "Members of a consumer group.", labels=["group"])
        try:
            groups = group_runtime(self.broker).groups
        except KafkaProtocolError:
            groups = {}
        for group_id, group in sorted(groups.items()):
            members.add_metric([group_id], len(group.members))
            for (topic, index), committed in sorted(group.offsets.items()):
                partition = self.broker.logs.get_log(topic, index)
                if partition is not None:
                    lag.add_metric([group_id, topic, str(index)], max(0, partition.high_watermark - committed.offset))
        yield lag
        yield members

    def _share_groups(self) -> Iterator[Any]:
        from kbroker.share import share_runtime
        from protocol.errors import KafkaProtocolError

        backlog = GaugeMetricFamily(
            "kbroker_share_group_backlog",
            "Records of a share partition not yet acknowledged or archived (waiting or in flight).",
            labels=["group", "topic", "partition"],
        )
        try:
            partitions = share_runtime(self.broker).partitions
        except KafkaProtocolError:
            partitions = {}
        for key, share in sorted(partitions.items()):
            group_id, topic, index = key
            partition = self.broker.logs.get_log(topic, index)
            if partition is not None:
                waiting = partition.high_watermark - share.start_offset - share.delivery_complete_count()
                backlog.add_metric([group_id, topic, str(index)], max(0, waiting))
        yield backlog

    def _replication(self) -> Iterator[Any]:
        """In a cluster (zookeeper.connect), Kafka's leader-side replication gauges for the replicated
        partitions this broker leads; a broker alone replicates nothing and reports none of them."""
        replicas = self.broker.replicas
        if replicas is None:
            return
        led = GaugeMetricFamily("kbroker_leader_partitions", "Replicated partitions this broker leads.")
        under = GaugeMetricFamily(
            "kbroker_under_replicated_partitions",
            "Partitions led here with fewer in-sync replicas than replicas (Kafka's UnderReplicatedPartitions).",
        )
        under_min = GaugeMetricFamily(
            "kbroker_under_min_isr_partitions",
            "Partitions led here with fewer in-sync replicas than min.insync.replicas: acks=all is refused.",
        )
        labels = ["topic", "partition"]
        in_sync = GaugeMetricFamily(
            "kbroker_partition_in_sync_replicas", "In-sync replicas of a partition led here.", labels=labels
        )
        assigned = GaugeMetricFamily("kbroker_partition_replicas", "Replicas of a partition led here.", labels=labels)
        counts = [0, 0, 0]
        for (topic, index), state in sorted(replicas.leaders.items()):
            isr, total = len(state.isr), len(state.replicas)
            counts[0] += 1
            counts[1] += isr < total
            counts[2] += isr < replicas.min_insync_replicas(topic)
            in_sync.add_metric([topic, str(index)], isr)
            assigned.add_metric([topic, str(index)], total)
        for family, count in zip((led, under, under_min), counts, strict=True):
            family.add_metric([], count)
        yield from (led, under, under_min, in_sync, assigned)


def _request_name(api_key: int) -> str:
    """Kafka's request name (as in its request metrics' request= tag): API_VERSIONS -> ApiVersions."""
    return "".join(part.capitalize() for part in api_name(api_key).split("_"))


def new_registry(collector: BrokerCollector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return bytes(generate_latest(registry))
