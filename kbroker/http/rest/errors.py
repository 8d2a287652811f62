"""REST Proxy's error answers: an HTTP status and a JSON body {"error_code": ..., "message": ...}.

Codes are REST Proxy's: the HTTP status, or the status times 100 plus a detail number.
"""

from __future__ import annotations

from aiohttp import web

V2_JSON = "application/vnd.kafka.v2+json"

TOPIC_NOT_FOUND = 40401
PARTITION_NOT_FOUND = 40402
CONSUMER_INSTANCE_NOT_FOUND = 40403
CONSUMER_ALREADY_EXISTS = 40902
UNSUPPORTED_MEDIA_TYPE = 415
UNPROCESSABLE = 422
ILLEGAL_STATE = 40903
INVALID_CONSUMER_CONFIG = 42204
CONSUMER_FORMAT_MISMATCH = 40601

# per-record produce errors (REST Proxy's "error_code" in an offsets entry)
KAFKA_ERROR = 1  # not retriable
KAFKA_RETRIABLE_ERROR = 2


class RestError(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: int, message: str) -> web.Response:
    return web.json_response({"error_code": code, "message": message}, status=status, content_type=V2_JSON)


def topic_not_found(topic: str) -> RestError:
    return RestError(404, TOPIC_NOT_FOUND, f"Topic {topic} not found.")


def partition_not_found(topic: str, partition: int) -> RestError:
    return RestError(404, PARTITION_NOT_FOUND, f"Partition {partition} of topic {topic} not found.")


def unprocessable(message: str) -> RestError:
    return RestError(422, UNPROCESSABLE, message)
