"""A local SparkSession with Spark's Kafka connector on its classpath, sized for a small machine."""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING

from scripts.spark.resolve_jars import spark_jars_option

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


def java_missing() -> str | None:
    """Why Spark cannot start here (no ``java`` on PATH nor JAVA_HOME), or None."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return None
    return "Spark needs Java 17+ (no java on PATH and no JAVA_HOME)"


def local_session(app_name: str, master: str = "local[2]", conf: dict[str, str] | None = None) -> SparkSession:
    """Start (or reuse) a local SparkSession whose ``spark.jars`` holds the connector matching pyspark."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name).config("spark.jars", spark_jars_option())
    for key, value in {**SMALL_MACHINE_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
