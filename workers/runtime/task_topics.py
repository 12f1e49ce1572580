"""The topics a source task run writes to, created before its first record to each (KIP-158).

As Kafka Connect's worker source task does: the first time a run writes to a topic, the
topic is looked up (Metadata, never creating it) and, if it does not exist, created with the
settings of the connector's first topic creation group that matches it (`topic_creation`),
through an admin client connected as the worker's admin client with the connector's
`admin.override.*` over it. A topic found or created is not looked up again in this run.
A topic that cannot be created fails the task, saying why: the coordinator is one broker,
so a replication factor above 1 is refused with INVALID_REPLICATION_FACTOR, and that is
the task's failure.

Without topic creation, a missing topic is made by the coordinator on the first write, with
its defaults, if its `auto.create.topics.enable` is set (fenced_output's Metadata request).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from kafka import KafkaAdminClient

from connect_rebalance.client_security import ClientSecurity, is_security_setting
from connect_rebalance.client_tuning import ADMIN, kafka_python_tuning
from connect_rebalance.errors import ErrorCode
from workers.config.topic_creation import TopicCreation
from workers.storage.fenced_output import error_text

log = logging.getLogger(__name__)
_UNAUTHORIZED = {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED}


class TopicCreationFailed(Exception):
    """A topic the task writes to does not exist and could not be created."""


class TaskTopics:
    def __init__(
        self, bootstrap: str, creation: TopicCreation, admin_settings: Mapping[str, str], client_id: str
    ) -> None:
        """`admin_settings`: the admin client's security and tuning, by Kafka's names."""
        self.bootstrap, self.creation, self.client_id = bootstrap, creation, client_id
        self.admin_settings = dict(admin_settings)
        self._known: set[str] = set()
        self._lock = asyncio.Lock()

    async def ensure(self, topic: str) -> None:
        """Returns once `topic` exists; TopicCreationFailed if it cannot be created."""
        if topic in self._known:
            return
        async with self._lock:
            if topic not in self._known:
                await asyncio.to_thread(self._find_or_create, topic)
                self._known.add(topic)

    def _admin(self) -> KafkaAdminClient:
        security = {k: v for k, v in self.admin_settings.items() if is_security_setting(k)}
        tuning = {k: v for k, v in self.admin_settings.items() if not is_security_setting(k)}
        options: dict[str, Any] = {"client_id": self.client_id, **kafka_python_tuning(tuning, ADMIN)}
        options.update(ClientSecurity.parse(security, "admin.override.").kafka_python())
        return KafkaAdminClient(bootstrap_servers=self.bootstrap.split(","), **options)

    def _find_or_create(self, topic: str) -> None:
        """Blocking: Kafka's `maybeCreateTopic`, with its messages."""
        log.info("The task will send records to topic '%s' for the first time. Checking whether topic exists",
                 topic)  # fmt: skip
        admin = self._admin()
        try:
            [found] = admin.describe_topics([topic])
            if found["error_code"] == ErrorCode.NONE:
                log.info("Topic '%s' already exists.", topic)
                return
            if found["error_code"] != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise TopicCreationFailed(
                    f"Error while attempting to create/find topic(s) '{topic}': {error_text(found)}"
                )
            group = self.creation.group_for(topic)
            described = group.describe(topic)
            log.info("Creating topic %s", described)
            spec = {"num_partitions": group.partitions, "replication_factor": group.replication_factor,
                    "configs": dict(group.configs)}  # fmt: skip
            [answer] = admin.create_topics({topic: spec}, raise_errors=False)["topics"]
        finally:
            admin.close()
        code = answer["error_code"]
        if code == ErrorCode.NONE:
            log.info("Created topic %s", described)
        elif code == ErrorCode.TOPIC_ALREADY_EXISTS:
            log.info("Found existing topic '%s'", topic)
        elif code in _UNAUTHORIZED:
            raise TopicCreationFailed(
                f"Task failed to create new topic {described}: {error_text(answer)}. Ensure that the task is "
                "authorized to create topics or that the topic exists and restart the task"
            )
        elif code == ErrorCode.INVALID_CONFIG:
            raise TopicCreationFailed(f"Unable to create topic(s) '{topic}': {error_text(answer)}")
        else:
            raise TopicCreationFailed(
                f"Error while attempting to create/find topic(s) '{topic}': {error_text(answer)} "
                f"(creating {described})"
            )
