"""kcat (Debian's build, bundling an old librdkafka) as a client of the compatibility suite."""
