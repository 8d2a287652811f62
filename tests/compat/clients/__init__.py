"""The clients of the compatibility suite and what drives them.

``adapter.Client`` is the one interface every scenario is written against; ``registry.FACTORIES`` names the
clients. In-process Python clients (``*_client.py``, with their group members in ``*_groups.py``), the
out-of-process drivers (``driver_client.py`` speaking JSON lines to ``drivers/``: Java, Go, Node, and
``pydriver.py`` for a Python client that must be killable), kcat, share-group members
(``share_members.py``), and hand-encoded requests below any client (``wire.py``, ``apiversions.py``).
"""
