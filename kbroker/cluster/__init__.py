"""Cluster mode: membership, controller election and partition state in ZooKeeper (Kafka's ZooKeeper-mode znodes).

Active only when `zookeeper.connect` is set; a broker without it runs alone, as it always did. The
coordinators' placement on the internal topics' leaders is kbroker/coordinator_placement.py (above this
package and kbroker/group, kbroker/txn); channel.py carries its requests to other brokers.
"""
