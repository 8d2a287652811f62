"""Share groups (KIP-932): point-to-point consumption where each record goes to one member.

partition.py   SharePartition: the in-flight engine of one (share group, partition), pure
"""
