"""A local SparkSession with Spark's Kafka connector on its classpath, sized for a small machine.

The connector comes the way Spark's own documentation says: ``spark.jars.packages`` names
``org.apache.spark:spark-sql-kafka-0-10_2.13`` at the installed pyspark's version, and Spark resolves it and its
dependencies from Maven Central into its Ivy cache (``~/.ivy2.5.2``) when the session starts (once; later
sessions reuse the cache).
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SMALL_MACHINE_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}


def connector_package(version: str | None = None) -> str:
    """Maven coordinates of Spark's Kafka connector for pyspark ``version`` (default: the installed one)."""
    if version is None:
        import pyspark

        version = str(pyspark.__version__)
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"


def java_missing() -> str | None:
    """Why Spark cannot start here (no ``java`` on PATH nor JAVA_HOME), or None."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return None
    return "Spark needs Java 17+ (no java on PATH and no JAVA_HOME)"


def local_session(app_name: str, master: str = "local[2]", conf: dict[str, str] | None = None) -> SparkSession:
    """Start (or reuse) a local SparkSession with the connector matching pyspark in ``spark.jars.packages``."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name).config("spark.jars.packages", connector_package())
    for key, value in {**SMALL_MACHINE_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
