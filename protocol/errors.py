"""Kafka's error codes as one table: code, name, whether clients retry it, and a short message.

`ErrorCode` is the table itself (an IntEnum whose members carry `retriable` and `message`);
`error_info` looks a code up; `KafkaProtocolError` is what handlers raise to answer with a code.
`InvalidRecordError` (and `CorruptRecordError`) are what the record batch codec raises on malformed
records (`protocol.records`, `protocol.compression`, `protocol.record_walk`).
The retriable flag follows Kafka's Java client: true when the code's exception is a RetriableException.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ErrorCode(IntEnum):
    retriable: bool
    message: str

    # The defaults only let type checkers accept the lookup form ErrorCode(3); every member sets all three.
    def __new__(cls, code: int, retriable: bool = False, message: str = "") -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        member.message = message
        return member

    # fmt: off
    UNKNOWN_SERVER_ERROR = (-1, False, "The broker failed in a way it has no specific code for.")
    NONE = (0, False, "No error.")
    OFFSET_OUT_OF_RANGE = (1, False, "The offset is outside the partition's range of retained offsets.")
    CORRUPT_MESSAGE = (2, True, "A record failed its CRC check, has an invalid size, or is otherwise corrupt.")
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "This broker does not host that topic or partition.")
    INVALID_FETCH_SIZE = (4, False, "The fetch size is invalid.")
    LEADER_NOT_AVAILABLE = (5, True, "The partition has no leader at the moment (an election is under way).")
    NOT_LEADER_OR_FOLLOWER = (6, True, "This broker is not the leader (or not a replica) of the partition.")
    REQUEST_TIMED_OUT = (7, True, "The request did not complete in time.")
    BROKER_NOT_AVAILABLE = (8, False, "The broker is not available.")
    REPLICA_NOT_AVAILABLE = (9, True, "The replica is not available for the partition.")
    MESSAGE_TOO_LARGE = (10, False, "A record batch is larger than the broker accepts.")
    STALE_CONTROLLER_EPOCH = (11, False, "The controller has moved to another broker.")
    OFFSET_METADATA_TOO_LARGE = (12, False, "The metadata committed with an offset is too large.")
    NETWORK_EXCEPTION = (13, True, "The connection closed before a response arrived.")
    COORDINATOR_LOAD_IN_PROGRESS = (14, True, "The coordinator is still loading its state.")
    COORDINATOR_NOT_AVAILABLE = (15, True, "The coordinator is not available.")
    NOT_COORDINATOR = (16, True, "This broker is not the coordinator for that group or transactional id.")
    INVALID_TOPIC_EXCEPTION = (17, False, "The topic name is invalid, or the operation is not allowed on it.")
    RECORD_LIST_TOO_LARGE = (18, False, "A record batch is larger than the segment size.")
    NOT_ENOUGH_REPLICAS = (19, True, "Fewer in-sync replicas than min.insync.replicas: records rejected.")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (20, True, "Records were written, but to fewer in-sync replicas than required.")
    INVALID_REQUIRED_ACKS = (21, False, "The produce request's acks value is invalid.")
    ILLEGAL_GENERATION = (22, False, "The group generation id is not the current one.")
    INCONSISTENT_GROUP_PROTOCOL = (23, False, "The member's protocols do not match the group's.")
    INVALID_GROUP_ID = (24, False, "The group id is invalid.")
    UNKNOWN_MEMBER_ID = (25, False, "The coordinator does not know this member id.")
    INVALID_SESSION_TIMEOUT = (26, False, "The session timeout is outside the broker's allowed range.")
    REBALANCE_IN_PROGRESS = (27, False, "The group is rebalancing; the member must rejoin.")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "The size of the offset commit is invalid.")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "Not authorized to access the topic.")
    GROUP_AUTHORIZATION_FAILED = (30, False, "Not authorized to access the group.")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "Not authorized for this cluster operation.")
    INVALID_TIMESTAMP = (32, False, "A record timestamp is outside the accepted range.")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "The broker does not enable that SASL mechanism.")
    ILLEGAL_SASL_STATE = (34, False, "The request is not valid in the current SASL exchange state.")
    UNSUPPORTED_VERSION = (35, False, "The broker does not support this API version.")
    TOPIC_ALREADY_EXISTS = (36, False, "A topic with this name already exists.")
    INVALID_PARTITIONS = (37, False, "The partition count is invalid.")
    INVALID_REPLICATION_FACTOR = (38, False, "The replication factor is invalid for the available brokers.")
    INVALID_REPLICA_ASSIGNMENT = (39, False, "The replica assignment is invalid.")
    INVALID_CONFIG = (40, False, "The configuration is invalid.")
    NOT_CONTROLLER = (41, True, "This broker is not the controller.")
    INVALID_REQUEST = (42, False, "The request is malformed or not valid for this broker.")
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False, "The log's message format does not support this request.")
    POLICY_VIOLATION = (44, False, "The request violates a configured policy.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False, "The producer's sequence number is not the expected next one.")
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "The producer's sequence number was already written.")
    INVALID_PRODUCER_EPOCH = (47, False, "The producer epoch is older than the current one.")
    INVALID_TXN_STATE = (48, False, "The transaction is not in a state that allows this operation.")
    INVALID_PRODUCER_ID_MAPPING = (49, False, "The producer id is not the one assigned to this transactional id.")
    INVALID_TRANSACTION_TIMEOUT = (50, False, "The transaction timeout exceeds transaction.max.timeout.ms.")
    CONCURRENT_TRANSACTIONS = (51, True, "Another operation on this transaction is still in progress.")
    TRANSACTION_COORDINATOR_FENCED = (52, False, "The transaction coordinator writing markers is no longer current.")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "Not authorized to use the transactional id.")
    SECURITY_DISABLED = (54, False, "Security features are disabled on this broker.")
    OPERATION_NOT_ATTEMPTED = (55, False, "Not attempted, because another part of the batched request failed.")
    KAFKA_STORAGE_ERROR = (56, True, "The broker could not access the partition's log on disk.")
    LOG_DIR_NOT_FOUND = (57, False, "The log directory is not one of the broker's.")
    SASL_AUTHENTICATION_FAILED = (58, False, "SASL authentication failed.")
    UNKNOWN_PRODUCER_ID = (59, False, "The broker has no state for this producer id (its records may have expired).")
    REASSIGNMENT_IN_PROGRESS = (60, False, "A partition reassignment is in progress.")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "Delegation tokens are disabled.")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "The delegation token does not exist.")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "The principal is not the token's owner or renewer.")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (64, False, "Delegation token requests are not allowed on this channel.")
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, "Not authorized for the delegation token operation.")
    DELEGATION_TOKEN_EXPIRED = (66, False, "The delegation token has expired.")
    INVALID_PRINCIPAL_TYPE = (67, False, "The principal type is not supported.")
    NON_EMPTY_GROUP = (68, False, "The group still has members.")
    GROUP_ID_NOT_FOUND = (69, False, "The group does not exist.")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "The fetch session id is unknown.")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "The fetch session epoch is not the expected one.")
    LISTENER_NOT_FOUND = (72, True, "The leader has no listener matching the one this request arrived on.")
    TOPIC_DELETION_DISABLED = (73, False, "Topic deletion is disabled.")
    FENCED_LEADER_EPOCH = (74, True, "The request's leader epoch is older than the broker's.")
    UNKNOWN_LEADER_EPOCH = (75, True, "The request's leader epoch is newer than the broker's.")
    UNSUPPORTED_COMPRESSION_TYPE = (76, False, "The client cannot read the partition's compression type.")
    STALE_BROKER_EPOCH = (77, False, "The broker epoch is stale.")
    OFFSET_NOT_AVAILABLE = (78, True, "The new leader's high watermark has not caught up yet.")
    MEMBER_ID_REQUIRED = (79, False, "The member must rejoin with the member id the coordinator assigned.")
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, "The preferred leader is not available.")
    GROUP_MAX_SIZE_REACHED = (81, False, "The group is at its maximum size.")
    FENCED_INSTANCE_ID = (82, False, "Another member holds this group.instance.id.")
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "No eligible leader is available for the partition.")
    ELECTION_NOT_NEEDED = (84, True, "The partition needs no leader election.")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "No partition reassignment is in progress.")
    GROUP_SUBSCRIBED_TO_TOPIC = (86, False, "The group is subscribed to the topic, so its offsets cannot be deleted.")
    INVALID_RECORD = (87, False, "The broker rejected a record that failed validation.")
    UNSTABLE_OFFSET_COMMIT = (88, True, "Offsets of an open transaction are pending for the partition.")
    THROTTLING_QUOTA_EXCEEDED = (89, True, "The request exceeded a throttling quota.")
    PRODUCER_FENCED = (90, False, "A newer producer with the same transactional id has fenced this one.")
    RESOURCE_NOT_FOUND = (91, False, "The request names a resource that does not exist.")
    DUPLICATE_RESOURCE = (92, False, "The request names the same resource twice.")
    UNACCEPTABLE_CREDENTIAL = (93, False, "The credential does not meet the acceptance criteria.")
    INCONSISTENT_VOTER_SET = (94, False, "The sender or receiver of a voter request is not an expected voter.")
    INVALID_UPDATE_VERSION = (95, False, "The feature update version is invalid.")
    FEATURE_UPDATE_FAILED = (96, False, "Finalized features could not be updated.")
    PRINCIPAL_DESERIALIZATION_FAILURE = (97, False, "A forwarded request's principal could not be deserialized.")
    SNAPSHOT_NOT_FOUND = (98, False, "The snapshot does not exist.")
    POSITION_OUT_OF_RANGE = (99, False, "The position is outside the snapshot.")
    UNKNOWN_TOPIC_ID = (100, True, "This broker does not host a topic with that id.")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "The broker id is already registered.")
    BROKER_ID_NOT_REGISTERED = (102, False, "The broker id is not registered.")
    INCONSISTENT_TOPIC_ID = (103, True, "The topic id does not match the log's topic id.")
    INCONSISTENT_CLUSTER_ID = (104, False, "The cluster id does not match the broker's.")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "The transactional id is unknown.")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "The fetch session used topic ids inconsistently.")
    INELIGIBLE_REPLICA = (107, False, "The proposed ISR contains an ineligible replica.")
    NEW_LEADER_ELECTED = (108, False, "The partition state was updated, but the leader changed.")
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "The offset now lives in tiered storage.")
    FENCED_MEMBER_EPOCH = (110, False, "The member epoch is fenced; the member must give up its partitions and rejoin.")
    UNRELEASED_INSTANCE_ID = (111, False, "Another member still holds this instance id.")
    UNSUPPORTED_ASSIGNOR = (112, False, "The group does not support this assignor or its versions.")
    STALE_MEMBER_EPOCH = (113, False, "The member epoch is stale; retry after the next heartbeat.")
    MISMATCHED_ENDPOINT_TYPE = (114, False, "The request reached an endpoint of the wrong type.")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "This endpoint type is not supported.")
    UNKNOWN_CONTROLLER_ID = (116, False, "The controller id is unknown.")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "The telemetry subscription id is unknown or outdated.")
    TELEMETRY_TOO_LARGE = (118, False, "The telemetry push is larger than the broker accepts.")
    INVALID_REGISTRATION = (119, False, "The controller considers the broker registration invalid.")
    TRANSACTION_ABORTABLE = (120, False, "The transaction hit an error; abort it to keep using the transactional id.")
    INVALID_RECORD_STATE = (121, False, "The record's state does not allow this acknowledgement.")
    SHARE_SESSION_NOT_FOUND = (122, True, "The share session is unknown.")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "The share session epoch is not the expected one.")
    FENCED_STATE_EPOCH = (124, False, "The share-group state epoch does not match the coordinator's.")
    INVALID_VOTER_KEY = (125, False, "The voter key does not match the receiving replica's.")
    DUPLICATE_VOTER = (126, False, "The voter is already in the voter set.")
    VOTER_NOT_FOUND = (127, False, "The voter is not in the voter set.")
    INVALID_REGULAR_EXPRESSION = (128, False, "The regular expression is invalid.")
    REBOOTSTRAP_REQUIRED = (129, False, "The client's metadata is stale; it must rebootstrap.")
    STREAMS_INVALID_TOPOLOGY = (130, False, "The streams topology is invalid.")
    STREAMS_INVALID_TOPOLOGY_EPOCH = (131, False, "The streams topology epoch is invalid.")
    STREAMS_TOPOLOGY_FENCED = (132, False, "The streams topology epoch is outdated.")
    SHARE_SESSION_LIMIT_REACHED = (133, True, "The broker has reached its limit of share sessions.")
    # fmt: on


@dataclass(frozen=True)
class ErrorInfo:
    code: int
    name: str
    retriable: bool
    message: str


def error_info(code: int) -> ErrorInfo:
    """The table row of `code`; ValueError for a code Kafka does not define."""
    error = ErrorCode(code)
    return ErrorInfo(int(error), error.name, error.retriable, error.message)


class KafkaProtocolError(Exception):
    """Raised by a handler to answer with an error code (and optionally a specific message)."""

    def __init__(self, code: int, message: str | None = None) -> None:
        self.code = ErrorCode(code)
        self.message = message if message is not None else self.code.message
        super().__init__(f"{self.code.name} ({int(self.code)}): {self.message}")

    @property
    def retriable(self) -> bool:
        return self.code.retriable


class InvalidRecordError(ValueError):
    """A record batch or one of its records is malformed (Kafka's InvalidRecordException)."""


class CorruptRecordError(InvalidRecordError):
    """The batch's CRC-32C does not match its contents (Kafka's CorruptRecordException)."""
