"""Every API key the coordinator and its clients speak, defined once.

Apache Kafka's numbers for its APIs (the contract real clients hold us to), and the project's
private block for the connect group APIs and KIP-848's client-side assignment
(docs/protocol.md), far from Kafka's range.
"""

from enum import IntEnum


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_CLUSTER = 60
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    # The project's private block.
    CONNECT_GROUP_HEARTBEAT = 10000
    CONNECT_GROUP_PREPARE_ASSIGNMENT = 10001
    CONNECT_GROUP_INSTALL_ASSIGNMENT = 10002
    CONNECT_GROUP_DESCRIBE = 10003
    CONSUMER_GROUP_PREPARE_ASSIGNMENT = 10010
    CONSUMER_GROUP_INSTALL_ASSIGNMENT = 10011
