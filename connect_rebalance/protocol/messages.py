"""Message classes for APIs kafka-python 3.0.12 does not ship.

Each class is generated from the JSON schema of the same name in `schemas/` (Apache Kafka's
schema format), so the schema files are both the codec and the protocol documentation.
Classes live at module level: kafka-python registers response classes globally by API key.
"""

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "connect_rebalance.protocol.schemas"


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):
    pass
