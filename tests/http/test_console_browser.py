"""The web console in a real browser: headless chromium (Debian's chromium and chromium-driver, installed
by scripts/install_clients) driven by Selenium, against a real kbroker holding records produced by
confluent-kafka and a group consuming them. Screenshots go to test-artifacts/console/ (ignored by git)."""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from websockets.sync.client import connect

from tests.broker.conftest import unique_topic
from tests.http.conftest import HttpBroker, http_get, http_json

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
HOSTILE = '<img id="pwned" src="x" onerror="document.title=\'pwned\'">'


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None or CHROMEDRIVER is None:  # only the browser's tests skip; the JSON ones below run
        pytest.skip(
            "chromium and chromedriver not installed (scripts/install_clients installs Debian's chromium, chromium-driver)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER or ""))
    driver.set_page_load_timeout(30)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def data(http_broker: HttpBroker) -> Iterator[dict[str, Any]]:
    """A topic of 2 partitions: JSON, text, binary and hostile values with keys and headers in partition 0,
    timestamps 1000 ms apart; a group consuming it and committing, still a member."""
    topic, group = unique_topic("console"), unique_topic("console-group")
    admin = AdminClient({"bootstrap.servers": http_broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    base = 1_700_000_000_000
    values = [json.dumps({"order": i, "item": "apple"}).encode() for i in range(5)]
    values += [b"plain text", b"\x00\xff\x10binary", HOSTILE.encode()]
    producer = Producer({"bootstrap.servers": http_broker.bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=b"key-%d" % i, partition=0, timestamp=base + i * 1000,
                         headers=[("trace", b"t-%d" % i)])  # fmt: skip
    producer.produce(topic, value=b"other", partition=1)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": http_broker.bootstrap, "group.id": group, "client.id": "console-test",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None and message.partition() == 0:
            seen += 1
            if seen == 3:
                consumer.commit(message, asynchronous=False)
    assert seen == 3
    try:
        yield {"topic": topic, "group": group, "base": base, "count": len(values)}
    finally:
        consumer.close()


def wait_for(condition: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
            if result:
                return result
        except Exception:  # noqa: BLE001 - the page is still rendering (stale or missing element)
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError("the page never showed what was expected")
        time.sleep(0.1)


def text_of(browser: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(browser.find_element(By.CSS_SELECTOR, css).text)


def shot(browser: Any, name: str) -> None:
    assert browser.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def test_topic_partition_and_message_browser(browser: Any, http_broker: HttpBroker, data: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    topic = data["topic"]
    browser.get(f"{http_broker.url}/console/")
    row = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, f'tr[data-topic="{topic}"]'))
    assert row.find_elements(By.TAG_NAME, "td")[1].text == "2"
    assert row.find_elements(By.TAG_NAME, "td")[2].text == str(data["count"] + 1)
    shot(browser, "1-topics")
    row.find_element(By.TAG_NAME, "a").click()
    wait_for(lambda: text_of(browser, "#topic-name") == topic)
    cells = [c.text for c in browser.find_elements(By.CSS_SELECTOR, 'tr[data-partition="0"] td')]
    assert cells[:3] == ["0", "0", str(data["count"])]
    assert "cleanup.policy" in text_of(browser, "#configs")
    shot(browser, "2-topic")
    browser.find_element(By.ID, "partition-0").click()
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#messages tbody tr")) == data["count"])
    first = browser.find_element(By.CSS_SELECTOR, 'tr[data-offset="0"]')
    assert '"order": 0' in first.find_element(By.CSS_SELECTOR, "td.value").text  # indented JSON
    assert first.find_element(By.CSS_SELECTOR, "td.key").text == "key-0"
    assert first.find_element(By.CSS_SELECTOR, "td.headers").text == "trace: t-0"
    # hostile content is text: shown literally, no element created, no script ran
    hostile = browser.find_element(By.CSS_SELECTOR, f'tr[data-offset="{data["count"] - 1}"] td.value').text
    assert hostile == HOSTILE
    assert not browser.find_elements(By.ID, "pwned") and browser.title == "kbroker console"
    shot(browser, "3-messages")
    # by offset, rendered as hex
    Select(browser.find_element(By.ID, "format")).select_by_value("hex")
    browser.find_element(By.ID, "offset").send_keys("6")
    browser.find_element(By.ID, "go-offset").click()
    wait_for(
        lambda: (
            [r.get_attribute("data-offset") for r in browser.find_elements(By.CSS_SELECTOR, "#messages tbody tr")]
            == ["6", "7"]
        )
    )
    assert browser.find_element(By.CSS_SELECTOR, 'tr[data-offset="6"] td.value').text == "00 ff 10 62 69 6e 61 72 79"
    shot(browser, "4-offset-hex")
    # by timestamp (ms), as text: the first record at or after base + 3500 ms is offset 4
    Select(browser.find_element(By.ID, "format")).select_by_value("text")
    browser.find_element(By.ID, "timestamp").send_keys(str(data["base"] + 3500))
    browser.find_element(By.ID, "go-timestamp").click()
    wait_for(lambda: "offset 4" in text_of(browser, "#timestamp-result"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#messages tbody tr")
    assert rows[0].get_attribute("data-offset") == "4"
    assert rows[0].find_element(By.CSS_SELECTOR, "td.value").text == '{"order": 4, "item": "apple"}'
    shot(browser, "5-timestamp")
    # the same instant in ISO 8601 (the page converts it)
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((data["base"] + 3500) // 1000)) + ".500Z"
    loaded = browser.find_element(By.ID, "view").get_attribute("data-loaded")
    browser.find_element(By.ID, "timestamp").send_keys(iso)
    browser.find_element(By.ID, "go-timestamp").click()
    wait_for(lambda: browser.find_element(By.ID, "view").get_attribute("data-loaded") != loaded)  # a new page
    assert f"timestamp {data['base'] + 3500}: offset 4" in text_of(browser, "#timestamp-result")


def test_group_members_lag_share_and_explain(browser: Any, http_broker: HttpBroker, data: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By

    topic, group = data["topic"], data["group"]
    browser.get(f"{http_broker.url}/console/#/groups")
    row = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, f'tr[data-group="{group}"]'))
    cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
    assert cells[1:4] == ["classic", "Stable", "1"]
    shot(browser, "6-groups")
    row.find_element(By.TAG_NAME, "a").click()
    wait_for(lambda: text_of(browser, "#group-name") == group)
    members = text_of(browser, "#members")
    assert "console-test" in members and f"{topic}: 0,1" in members
    lag_rows = [
        [c.text for c in r.find_elements(By.TAG_NAME, "td")]
        for r in browser.find_elements(By.CSS_SELECTOR, "#lag tbody tr")
    ]
    assert [topic, "0", "3", str(data["count"]), str(data["count"] - 3)] == lag_rows[0][:5]
    shot(browser, "7-group")
    # a KIP-848 consumer group (group.protocol=consumer) shows as type "consumer" with its assignment
    kip848_group = unique_topic("console-kip848")
    kip848 = Consumer({"bootstrap.servers": http_broker.bootstrap, "group.id": kip848_group, "group.protocol": "consumer",
                       "client.id": "console-kip848", "auto.offset.reset": "earliest"})  # fmt: skip
    try:
        kip848.subscribe([topic])
        deadline = time.monotonic() + 30
        while not kip848.assignment() and time.monotonic() < deadline:
            kip848.poll(0.2)
        browser.get(f"{http_broker.url}/console/#/group/{kip848_group}")
        wait_for(lambda: f"{topic}: 0,1" in text_of(browser, "#members"))
        assert text_of(browser, "#group-state").startswith("consumer · Stable")
        assert "console-kip848" in text_of(browser, "#members")
        shot(browser, "7b-consumer-group")
    finally:
        kip848.close()
    # a queue consumer on the WebSocket gateway holding two records of partition 1: a share group. Its
    # share partitions start at the end (share.auto.offset.reset=latest): records are produced until two came.
    queue_group = unique_topic("console-queue")
    producer = Producer({"bootstrap.servers": http_broker.bootstrap})
    with connect(f"{http_broker.url.replace('http', 'ws')}/v1/queues/ws?group={queue_group}&topics={topic}") as ws:
        welcome = json.loads(ws.recv(timeout=10))
        assert welcome["type"] == "welcome"
        ws.send(json.dumps({"type": "credit", "n": 2}))
        held: list[dict[str, Any]] = []
        deadline = time.monotonic() + 30
        while len(held) < 2 and time.monotonic() < deadline:
            producer.produce(topic, value=b"queued", partition=1)
            assert producer.flush(30) == 0
            try:
                held.append(json.loads(ws.recv(timeout=1)))
            except TimeoutError:
                continue
        assert [frame["type"] for frame in held] == ["message", "message"]
        browser.find_element(By.ID, "nav-share").click()
        heading = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, f'h3[data-share-group="{queue_group}"]'))
        assert f"queue consumers: {welcome['consumer']}" in text_of(browser, "main")
        in_flight = wait_for(lambda: [r for r in browser.find_elements(By.CSS_SELECTOR, "main table tr")
                                      if r.text.startswith(f"{topic} 1 ")])  # fmt: skip
        assert in_flight[0].find_elements(By.TAG_NAME, "td")[4].text == "2"
        assert heading.text.startswith(queue_group)
        shot(browser, "8-share")
    browser.find_element(By.ID, "nav-explain").click()
    explained = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, f'div.explain-group[data-group="{group}"]'))
    assert "is Stable" in explained.text and "console-test" in explained.text
    shot(browser, "9-explain")
    # live: a record produced now shows on the topics page without a reload
    browser.find_element(By.ID, "nav-topics").click()
    count = f'tr[data-topic="{topic}"] td:nth-child(3)'
    before = int(wait_for(lambda: text_of(browser, count)))
    producer.produce(topic, value=b"late", partition=1)
    assert producer.flush(30) == 0
    wait_for(lambda: text_of(browser, count) == str(before + 1))


def publish(http_broker: HttpBroker, queue: str, value: bytes, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(
        f"{http_broker.url}/v1/vq/{queue}", data=value, method="POST", headers=headers or {}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(json.loads(response.read())["offset"])


def test_virtual_queues_list_filter_and_queue(browser: Any, http_broker: HttpBroker) -> None:
    from selenium.webdriver.common.by import By

    prefix = unique_topic("console-vq")
    jobs, other = f"{prefix}-jobs", f"{prefix}-other"
    offsets = [publish(http_broker, jobs, b'{"job": %d}' % i) for i in range(3)]
    publish(http_broker, jobs, b"invoice", {"kbroker-tag": "billing", "kbroker-deliver-after-ms": "3600000"})
    publish(http_broker, other, HOSTILE.encode())
    status, acked = http_json("POST", f"{http_broker.url}/v1/vq/{jobs}/ack", {"consumer": "worker", "offset": offsets[1] + 1},
                              content_type="application/json")  # fmt: skip
    assert status == 200 and acked["position"] == offsets[1] + 1
    browser.get(f"{http_broker.url}/console/#/vq?prefix={prefix}")
    row = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, f'tr[data-queue="{jobs}"]'))
    assert [c.text for c in row.find_elements(By.TAG_NAME, "td")][2:] == ["4", "1", "worker: lag 2"]
    assert browser.find_element(By.CSS_SELECTOR, f'tr[data-queue="{other}"]')
    shot(browser, "10-virtual-queues")
    # the prefix filter narrows the list (typed while the page polls: the input is kept)
    field = browser.find_element(By.ID, "vq-prefix")
    field.clear()
    field.send_keys(jobs)
    time.sleep(2.5)  # a poll passes while typing; the typed text must survive it
    assert browser.find_element(By.ID, "vq-prefix").get_attribute("value") == jobs
    browser.find_element(By.ID, "vq-go").click()
    wait_for(
        lambda: (
            [r.get_attribute("data-queue") for r in browser.find_elements(By.CSS_SELECTOR, "#queues tbody tr")]
            == [jobs]
        )
    )
    browser.find_element(By.CSS_SELECTOR, f'tr[data-queue="{jobs}"] a').click()
    wait_for(lambda: text_of(browser, "#queue-name") == jobs)
    assert "depth 4" in text_of(browser, "#queue-summary")
    consumer = [c.text for c in browser.find_elements(By.CSS_SELECTOR, 'tr[data-consumer="worker"] td')]
    assert consumer == ["worker", str(offsets[1] + 1), "2"]
    records = browser.find_elements(By.CSS_SELECTOR, "#queue-records tbody tr")
    assert len(records) == 4  # the delayed record shows too, with when it is due and its tag
    assert '"job": 0' in records[0].find_element(By.CSS_SELECTOR, "td.value").text
    assert records[3].find_element(By.CSS_SELECTOR, "td.due").text.startswith("due ")
    assert [c.text for c in records[3].find_elements(By.TAG_NAME, "td")][3:5] == ["billing", "invoice"]
    shot(browser, "11-virtual-queue")
    # hostile content in a queue is text too
    browser.get(f"{http_broker.url}/console/#/vq/{other}")
    value = wait_for(lambda: text_of(browser, "#queue-records td.value"))
    assert value == HOSTILE and not browser.find_elements(By.ID, "pwned")


def test_queue_records_json_pages_and_refuses_unknown_queues(http_broker: HttpBroker) -> None:
    queue = unique_topic("console-vq-pages")
    offsets = [publish(http_broker, queue, b"r%d" % i) for i in range(5)]
    status, body = http_json("GET", f"{http_broker.url}/v1/console/vq/{queue}/records?offset=0&limit=2")
    assert status == 200 and [r["offset"] for r in body["records"]] == offsets[:2] and body["more"]
    assert [r["value"]["text"] for r in body["records"]] == ["r0", "r1"]
    status, rest = http_json("GET", f"{http_broker.url}/v1/console/vq/{queue}/records?offset={body['next_offset']}")
    assert [r["offset"] for r in rest["records"]] == offsets[2:] and not rest["more"]
    assert http_get(f"{http_broker.url}/v1/console/vq/no-such-queue/records")[0] == 404
    assert http_get(f"{http_broker.url}/v1/console/vq/{queue}/records?offset=x")[0] == 400


def test_console_json_rejects_bad_input(http_broker: HttpBroker, data: dict[str, Any]) -> None:
    def status(path: str) -> int:
        try:
            with urllib.request.urlopen(f"{http_broker.url}{path}", timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    assert status(f"/v1/console/topics/{data['topic']}/partitions/0/messages?offset=x") == 400
    assert status("/v1/console/topics/no-such-topic") == 404
    assert status(f"/v1/console/topics/{data['topic']}/partitions/9/messages") == 404
    assert status("/v1/console/groups/no-such-group") == 404
    assert status("/console/../app.py") == 404
    assert status("/console/nothing.js") == 404


def test_message_page_is_bounded(http_broker: HttpBroker) -> None:
    """80 records of 20 KiB: each shows its first 16 KiB, and a page stops at 1 MiB shown (64 records)."""
    topic = unique_topic("console-big")
    producer = Producer({"bootstrap.servers": http_broker.bootstrap})
    for _ in range(80):
        producer.produce(topic, value=b"z" * 20480, partition=0)
    assert producer.flush(30) == 0
    url = f"{http_broker.url}/v1/console/topics/{topic}/partitions/0/messages?offset=0&limit=200"
    with urllib.request.urlopen(url, timeout=30) as response:
        page = json.loads(response.read())
    assert len(page["messages"]) == 64 and page["next_offset"] == 64 and page["high_watermark"] == 80
    value = page["messages"][0]["value"]
    assert value["size"] == 20480 and value["truncated"] and len(value["text"]) == 16384
