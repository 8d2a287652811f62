"""Virtual queues: many small queues on one data topic, each a record key, with named consumers.

index.py      QueueIndex: each queue's offsets per partition; its checkpoint file (pure)
positions.py  named consumers' positions, the ack rules, the positions topic's records (pure)
records.py    a queue record, its delivery headers (delay, tag), reading in order (pure)
service.py    VirtualQueues: the data topic, the index following its appends, checkpoints,
              publish, read, ack, delete, list (the runtime; the HTTP gateway serves it)
"""

from kbroker.vq.service import QueueNotFound, VirtualQueues, VqConfig

__all__ = ["QueueNotFound", "VirtualQueues", "VqConfig"]
