# kbroker in a container: docker build -t kbroker . && docker run -p 9092:9092 kbroker
#
# Clients reach the broker at the advertised address, localhost:9092 by default. Override it with
# an environment variable or an argument (arguments are appended to `kbroker serve`):
#   docker run -p 9092:9092 -e KBROKER_ADVERTISED_LISTENER=broker.example:9092 kbroker
#   docker run -p 9092:9092 kbroker --advertised-listener broker.example:9092 --config num.partitions=3
# Data lives in the volume /var/lib/kbroker.
# HTTP (REST Proxy v2, /health, /ready, /metrics) listens on 8082; -e KBROKER_HTTP_LISTEN= turns it off,
# and the health check then falls back to connecting to the Kafka port.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/kbroker
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY kbroker ./kbroker
RUN pip install . \
    && useradd --system --uid 10001 --home-dir /var/lib/kbroker --shell /usr/sbin/nologin kbroker \
    && mkdir -p /var/lib/kbroker \
    && chown kbroker:kbroker /var/lib/kbroker

# Equivalent to: kbroker serve --listen 0.0.0.0:9092 --advertised-listener localhost:9092 --data-dir /var/lib/kbroker
#                              --http-listen 0.0.0.0:8082
ENV KBROKER_LISTEN=0.0.0.0:9092 \
    KBROKER_ADVERTISED_LISTENER=localhost:9092 \
    KBROKER_DATA_DIR=/var/lib/kbroker \
    KBROKER_HTTP_LISTEN=0.0.0.0:8082

USER kbroker
WORKDIR /var/lib/kbroker
VOLUME ["/var/lib/kbroker"]
EXPOSE 9092 8082
# healthy = /ready answers 200 (logs loaded, coordinators started, Kafka listener serving); without the HTTP
# listener, the Kafka port accepting a connection
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD python -c "import os, socket, urllib.request; \
h = os.environ.get('KBROKER_HTTP_LISTEN'); k = os.environ['KBROKER_LISTEN']; \
urllib.request.urlopen('http://127.0.0.1:%s/ready' % h.rsplit(':', 1)[1], timeout=2) if h \
else socket.create_connection(('127.0.0.1', int(k.rsplit(':', 1)[1])), timeout=2).close()"
STOPSIGNAL SIGTERM
ENTRYPOINT ["kbroker", "serve"]
