"""The compatibility scenarios: each test is written once against ``tests.compat.clients.adapter.Client`` and
runs for every client that can do it, against kbroker or (``KBROKER_BOOTSTRAP``) Apache Kafka."""
