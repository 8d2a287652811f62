"""Cluster mode: membership, controller election and partition state in ZooKeeper (Kafka's ZooKeeper-mode znodes).

Active only when `zookeeper.connect` is set; a broker without it runs alone, as it always did.
"""
