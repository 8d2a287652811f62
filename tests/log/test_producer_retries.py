"""A client with at most 5 requests in flight that loses connections and retries: no loss, no duplicate.

The network is modelled as one ordered connection: requests are processed in order,
a lost connection drops every queued request and response, and the client re-sends
all its unacknowledged batches, in order, with their original sequences (as Java
and librdkafka idempotent producers do).
"""

from __future__ import annotations

from collections import deque

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kbroker.log.producer_state import ProducerStateManager
from protocol.records import RecordBatch
from tests.log.producer_batches import idempotent_batch, record

MAX_IN_FLIGHT = 5


class Broker:
    def __init__(self) -> None:
        self.state = ProducerStateManager(clock=lambda: 0, expiration_ms=1 << 62)
        self.log: list[int] = []  # batch numbers (two records each)

    def handle(self, number: int, batch: RecordBatch) -> int:
        duplicate = self.state.check(batch)  # raises on a gap or stale epoch: the test fails
        if duplicate is not None:
            return duplicate.base_offset
        self.log.append(number)
        record(self.state, batch, 2 * (len(self.log) - 1))
        return 2 * (len(self.log) - 1)


@settings(max_examples=300, deadline=None)
@example(total=7, bursts=[("send", 5), ("deliver", 5), ("lose", 1)], start_seq=0x7FFFFFFF - 10)
@given(
    total=st.integers(1, 40),
    bursts=st.lists(st.tuples(st.sampled_from(["send", "deliver", "respond", "lose"]), st.integers(1, 6)), max_size=80),
    start_seq=st.sampled_from([0, 0x7FFFFFFF - 10]),
)
def test_retries_after_lost_connections_never_duplicate_nor_lose(
    total: int, bursts: list[tuple[str, int]], start_seq: int
) -> None:
    broker = Broker()
    batches = [RecordBatch(idempotent_batch(3, 0, (start_seq + 2 * i) % 0x80000000, 2)) for i in range(total)]
    unacked: deque[int] = deque()
    requests: deque[int] = deque()
    responses: deque[tuple[int, int]] = deque()
    next_batch = 0
    acked: dict[int, int] = {}

    def step(action: str) -> None:
        nonlocal next_batch
        if action == "send" and next_batch < total and len(unacked) < MAX_IN_FLIGHT:
            unacked.append(next_batch)
            requests.append(next_batch)
            next_batch += 1
        elif action == "deliver" and requests:
            number = requests.popleft()
            responses.append((number, broker.handle(number, batches[number])))
        elif action == "respond" and responses:
            number, offset = responses.popleft()
            assert unacked[0] == number
            unacked.popleft()
            acked[number] = offset
        elif action == "lose":
            requests.clear()
            responses.clear()
            requests.extend(unacked)

    for action, repeat in bursts:
        for _ in range(repeat):
            step(action)
    while len(acked) < total:  # then the network behaves
        for action in ("send", "deliver", "respond"):
            step(action)
    assert broker.log == list(range(total))
    assert acked == {n: 2 * n for n in range(total)}
