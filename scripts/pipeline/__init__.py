"""A log-aggregation pipeline on Kafka and Spark: web-access events in, per-minute metrics per path out.

generate.py produces the events, job.py is the Structured Streaming job, check.py compares the job's output topic
with aggregates computed from the generated input, and run.py (``scripts/pipeline/run``) does all three.
"""
