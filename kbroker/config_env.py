"""The apache/kafka image's environment convention: KAFKA_<PROPERTY> variables as broker properties.

The image turns each variable whose name starts with KAFKA_ into a server.properties line: the prefix
dropped, the rest lower-cased, then `___` -> `-`, `__` -> `_` and `_` -> `.`. So KAFKA_LISTENERS is
`listeners`, KAFKA_LISTENER_SECURITY_PROTOCOL_MAP is `listener.security.protocol.map` and
KAFKA_LISTENER_NAME_EXTERNAL_SSL__KEYSTORE_LOCATION would be `listener.name.external.ssl_keystore.location`.
Variables the image reserves for the JVM and log4j (KAFKA_OPTS, KAFKA_HEAP_OPTS, KAFKA_LOG4J_LOGGERS, ...)
are not properties. kbroker serve reads them between --config-file and --config (README, "Compose").

Pure: the environment is passed in, nothing is logged here.
"""

from __future__ import annotations

from collections.abc import Mapping

PREFIX = "KAFKA_"
# the image's variables that configure the JVM, log4j or the image itself, never server.properties
NOT_PROPERTIES = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HEAP_OPT",
        "KAFKA_HEAP_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JMX_OPTS",
        "KAFKA_JMX_PORT",
        "KAFKA_JMX_HOSTNAME",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_DEBUG",
        "KAFKA_HOME",
    }
)


def property_name(variable: str) -> str | None:
    """The property a KAFKA_* variable sets, or None when the variable is not one."""
    if not variable.startswith(PREFIX) or variable in NOT_PROPERTIES or len(variable) == len(PREFIX):
        return None
    rest = variable[len(PREFIX) :].lower()
    return rest.replace("_", ".").replace("...", "-").replace("..", "_")


def properties_from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """{property: value} of every KAFKA_* variable that names a property (unknown names included: the
    caller decides what to do with them)."""
    out: dict[str, str] = {}
    for variable in sorted(environ):
        name = property_name(variable)
        if name is not None:
            out[name] = environ[variable]
    return out
