"""The fixture in an asyncio test: the broker has its own loop, so an aiokafka client on the test's loop
reaches it like any other, and the controls can be called from a coroutine."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from kbroker.testing import InProcessBroker


def test_aiokafka_round_trip_with_a_fault(kbroker: InProcessBroker) -> None:
    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=kbroker.bootstrap, enable_idempotence=True)
        await producer.start()
        try:
            await producer.send_and_wait("orders", b"first")
            kbroker.fail("Produce", "NOT_LEADER_OR_FOLLOWER")  # milliseconds of blocking on this loop
            await producer.send_and_wait("orders", b"second")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("orders", bootstrap_servers=kbroker.bootstrap, auto_offset_reset="earliest")
        await consumer.start()
        try:
            values = []
            while len(values) < 2:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 20)
                values += [m.value for records in batch.values() for m in records]
            return values
        finally:
            await consumer.stop()

    assert asyncio.run(scenario()) == [b"first", b"second"]
    assert kbroker.faults["injected"] == 1
