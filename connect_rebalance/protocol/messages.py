"""Message classes for APIs kafka-python 3.0.12 does not ship, and the project's own.

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


class ConnectGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConnectGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ConnectGroupPrepareAssignmentRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConnectGroupPrepareAssignmentResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ConnectGroupInstallAssignmentRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConnectGroupInstallAssignmentResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ConnectGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConnectGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupPrepareAssignmentRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupPrepareAssignmentResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupInstallAssignmentRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupInstallAssignmentResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class InitFencedProducerRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class InitFencedProducerResponse(ApiMessage, load_json=_SCHEMAS):
    pass
