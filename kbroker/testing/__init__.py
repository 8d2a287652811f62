"""Testing Kafka code without Docker: a kbroker inside the test process (docs/testing.md).

    from kbroker.testing import InProcessBroker

    with InProcessBroker() as broker:        # a free port, a temporary data directory
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        broker.advance(45)                   # the virtual clock: session timeouts fire now
        broker.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
        broker.reset()                       # no topics, groups, transactions left

With pytest, the `kbroker` and `kbroker_factory` fixtures (kbroker.testing.plugin, registered
through the pytest11 entry point) hand out such brokers.
"""

from kbroker.testing.broker import TEST_DEFAULTS, InProcessBroker
from kbroker.testing.faults import Fault

__all__ = ["TEST_DEFAULTS", "Fault", "InProcessBroker"]
