"""Worker settings, named and defaulted as Kafka Connect's distributed worker settings are.

Read from a Java-style properties file (`connect-rebalance worker --config worker.properties`).
Unknown names are reported, bad values fail at start with a message naming the setting.
`group.protocol` chooses the membership protocol: `connect` (this project's connect group)
or `classic` (JoinGroup/SyncGroup with Kafka Connect's embedded protocol).
"""

from __future__ import annotations

import socket
import uuid
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from connect_rebalance.properties import ConfigError, read_properties


class WorkerConfig(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    bootstrap_servers: str = Field(alias="bootstrap.servers")
    group_id: str = Field(alias="group.id", min_length=1)
    config_storage_topic: str = Field(alias="config.storage.topic", min_length=1)
    offset_storage_topic: str = Field(alias="offset.storage.topic", min_length=1)
    status_storage_topic: str = Field(alias="status.storage.topic", min_length=1)
    listeners: str = Field("http://127.0.0.1:8083", alias="listeners")
    rest_advertised_host_name: str | None = Field(None, alias="rest.advertised.host.name")
    rest_advertised_port: int | None = Field(None, alias="rest.advertised.port", ge=0, le=65535)
    group_protocol: Literal["connect", "classic"] = Field("connect", alias="group.protocol")
    connect_protocol: Literal["eager", "compatible", "sessioned"] = Field(
        "sessioned", alias="connect.protocol"
    )
    scheduled_rebalance_max_delay_ms: int = Field(300000, alias="scheduled.rebalance.max.delay.ms", ge=0)
    heartbeat_interval_ms: int = Field(3000, alias="heartbeat.interval.ms", ge=1)
    session_timeout_ms: int = Field(10000, alias="session.timeout.ms", ge=1)
    rebalance_timeout_ms: int = Field(60000, alias="rebalance.timeout.ms", ge=1)
    inter_worker_key_ttl_ms: int = Field(3600000, alias="inter.worker.key.ttl.ms", ge=1000, le=2147483647)
    task_shutdown_graceful_timeout_ms: int = Field(5000, alias="task.shutdown.graceful.timeout.ms", ge=0)
    worker_id_override: str | None = Field(None, alias="worker.id")
    # Task runtime: where Spark runs tasks' streaming queries, and where their checkpoints live
    # (shared by every worker, so a task resumes wherever it is assigned next).
    spark_master: str = Field("local[*]", alias="spark.master")
    checkpoint_dir: str = Field("./checkpoints", alias="checkpoint.dir", min_length=1)
    # Start and warm the worker's SparkSession when the worker starts (else on the first Spark task).
    spark_session_warmup: bool = Field(True, alias="spark.session.warmup")
    spark_settings: dict[str, str] = Field(default_factory=dict, exclude=True)

    @field_validator("bootstrap_servers")
    @classmethod
    def _has_port(cls, value: str) -> str:
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not port.isdigit():
                raise ValueError(f"{server!r} is not host:port")
        return value

    @field_validator("listeners")
    @classmethod
    def _http_listener(cls, value: str) -> str:
        parsed = urlparse(value.split(",")[0].strip())
        if parsed.scheme != "http" or parsed.port is None:
            raise ValueError(f"{value!r} is not http://host:port")
        return value

    @property
    def bind(self) -> tuple[str, int]:
        parsed = urlparse(self.listeners.split(",")[0].strip())
        return parsed.hostname or "0.0.0.0", 8083 if parsed.port is None else parsed.port

    def with_bound_port(self, port: int) -> WorkerConfig:
        """The same settings, listening on `port` (after binding port 0)."""
        host = self.bind[0]
        return self.model_copy(update={"listeners": f"http://{host}:{port}"})

    @property
    def rest_url(self) -> str:
        host, port = self.bind
        host = self.rest_advertised_host_name or (
            host if host not in ("0.0.0.0", "") else socket.gethostname()
        )
        return f"http://{host}:{self.rest_advertised_port or port}"

    @property
    def worker_id(self) -> str:
        """Kafka Connect's worker id: the advertised host:port."""
        return self.worker_id_override or self.rest_url.removeprefix("http://")

    @property
    def member_id(self) -> str:
        if not hasattr(self, "_member_id"):
            object.__setattr__(self, "_member_id", f"{self.worker_id}-{uuid.uuid4().hex[:12]}")
        return self._member_id  # type: ignore[attr-defined,no-any-return]

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> WorkerConfig:
        """Kafka Connect's names; any other `spark.*` setting is passed through to Spark."""
        known = {f.alias for f in cls.model_fields.values()}
        spark = {k: str(v) for k, v in settings.items() if k.startswith("spark.") and k not in known}
        unknown = sorted(set(settings) - known - set(spark))
        if unknown:
            raise ConfigError(f"unknown setting {unknown[0]!r}")
        try:
            return cls.model_validate({**{k: v for k, v in settings.items() if k not in spark},
                                       "spark_settings": spark})  # fmt: skip
        except ValidationError as exc:
            first = exc.errors()[0]
            name = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"invalid value for {name!r}: {first['msg']}") from exc

    @classmethod
    def from_file(cls, path: Path, overrides: dict[str, str] | None = None) -> WorkerConfig:
        return cls.from_settings({**read_properties(path), **(overrides or {})})
