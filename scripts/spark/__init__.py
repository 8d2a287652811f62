"""Spark's Kafka connector for kbroker: jar resolution and a local SparkSession."""
