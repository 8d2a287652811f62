#!/usr/bin/env python3
"""Spark's Kafka connector jars for the installed pyspark, resolved from Maven Central once into a local cache.

``org.apache.spark:spark-sql-kafka-0-10_2.13`` at pyspark's own version, with the jars it adds to a pyspark
install: spark-token-provider-kafka-0-10, kafka-clients and commons-pool2 (the rest of its dependencies already
ship in ``pyspark/jars``). Maven resolves ``scripts/spark/pom.xml`` into
``$KBROKER_CACHE/spark-jars-<version>/`` (default ``~/.cache/kbroker``); later calls reuse the cache.

Usage::

    scripts/spark/resolve_jars.py            # resolve (once) and print the comma-separated list for spark.jars
    scripts/spark/resolve_jars.py --dir      # print the cache directory instead
    scripts/spark/resolve_jars.py --version 4.0.0
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

POM = Path(__file__).resolve().parent / "pom.xml"
CACHE_ROOT = Path(os.environ.get("KBROKER_CACHE", Path.home() / ".cache" / "kbroker"))
ARTIFACTS = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)


def pyspark_version() -> str:
    """The installed pyspark's version (the connector must match it exactly)."""
    import pyspark

    return str(pyspark.__version__)


def cache_dir(version: str) -> Path:
    return CACHE_ROOT / f"spark-jars-{version}"


def _resolve(version: str, target: Path) -> None:
    """Run Maven on the pom into a scratch directory, then move the jars into ``target`` in one rename."""
    scratch = target.with_name(target.name + ".partial")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    shutil.copy(POM, scratch / "pom.xml")
    command = [
        "mvn",
        "-q",
        "-B",
        "-Dstyle.color=never",
        "-f",
        str(scratch / "pom.xml"),
        "dependency:copy-dependencies",
        f"-Dspark.version={version}",
        f"-DoutputDirectory={scratch / 'jars'}",
        f"-DincludeArtifactIds={','.join(ARTIFACTS)}",
        "-DincludeScope=runtime",
    ]
    subprocess.run(command, check=True, stdout=sys.stderr)
    jars = sorted(p.name for p in (scratch / "jars").glob("*.jar"))
    missing = [a for a in ARTIFACTS if not any(j.startswith(a + "-") for j in jars)]
    if missing:
        raise RuntimeError(f"Maven did not resolve {', '.join(missing)} for Spark {version}")
    shutil.rmtree(target, ignore_errors=True)
    (scratch / "jars").rename(target)
    shutil.rmtree(scratch, ignore_errors=True)


def connector_jars(version: str | None = None) -> list[Path]:
    """The connector's jars for Spark ``version`` (default: the installed pyspark's), resolving them if needed."""
    version = version or pyspark_version()
    target = cache_dir(version)
    if not any(target.glob("spark-sql-kafka-*.jar")):
        _resolve(version, target)
    return sorted(target.glob("*.jar"))


def spark_jars_option(version: str | None = None) -> str:
    """The value for the ``spark.jars`` setting: the connector's jars, comma-separated."""
    return ",".join(str(jar) for jar in connector_jars(version))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", help="Spark version (default: the installed pyspark's)")
    parser.add_argument("--dir", action="store_true", help="print the cache directory, not the jar list")
    args = parser.parse_args(argv)
    jars = connector_jars(args.version)
    print(jars[0].parent if args.dir else ",".join(str(jar) for jar in jars))
    return 0


if __name__ == "__main__":
    sys.exit(main())
