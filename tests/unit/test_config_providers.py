"""Kafka Connect's config providers (workers/config/providers.py): `${provider:[path:]key}`
resolved as Apache Kafka resolves it, by its three providers and their `allowed.paths` and
`allowlist.pattern`; the provider settings refused at start when they would do nothing or
cannot work; a worker's own settings resolved at start; and a connector that starts in
process seeing its config resolved while the config topic keeps the `${...}` text."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from connect_rebalance.properties import ConfigError
from connect_rebalance.work import CONNECTOR
from tests.support.memory_log import MemoryLogs
from workers.config.providers import (
    PACKAGE,
    AllowedPaths,
    ConfigProvider,
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
    Found,
    Unresolved,
    VariableError,
    parse_providers,
    resolve,
    with_variables,
)
from workers.config.worker import WorkerConfig
from workers.distributed.herder import Herder
from workers.distributed.herder_api import HerderApi
from workers.plugins.api import ConfigDef, Connector, Task
from workers.rest.server import RestApi

pytestmark = pytest.mark.unit
REQUIRED = {"bootstrap.servers": "h:9092", "group.id": "g", "config.storage.topic": "c",
            "offset.storage.topic": "o", "status.storage.topic": "s"}  # fmt: skip
SECRET = "hunter2-do-not-show"


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    """A directory holding a properties file and a file a key, as an operator mounts secrets."""
    (tmp_path / "app.properties").write_text(
        f"password={SECRET}\nuser = bob\nlong = one \\\n    two\nunicode=caf\\u00e9\nurl=jdbc:pg://h:5432/db\n"
    )
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "token").write_text("  tok-en \n")
    (tmp_path / "keys" / "sub").mkdir()
    (tmp_path / "outside.properties").write_text("password=elsewhere\n")
    return tmp_path


def providers(
    settings: dict[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, ConfigProvider]:
    found, problems = parse_providers({"config.providers": "file,dir,env", **settings}, environ or {})
    assert problems == []
    return found


STANDARD = {
    "config.providers.file.class": PACKAGE + "FileConfigProvider",
    "config.providers.dir.class": PACKAGE + "DirectoryConfigProvider",
    "config.providers.env.class": PACKAGE + "EnvVarConfigProvider",
}


# -- the syntax ---------------------------------------------------------------------------


def test_variables_are_replaced_in_place_and_the_rest_of_the_text_is_kept(secrets: Path) -> None:
    file = secrets / "app.properties"
    resolution = resolve({
        "url": f"${{file:{file}:url}}?user=${{file:{file}:user}}&password=${{file:{file}:password}}",
        "plain": "no variables", "env": "${env:HOME_DIR}/x",
    }, providers(STANDARD, {"HOME_DIR": "/home/app"}))  # fmt: skip
    assert resolution.values == {
        "url": f"jdbc:pg://h:5432/db?user=bob&password={SECRET}", "plain": "no variables",
        "env": "/home/app/x",
    }  # fmt: skip
    assert resolution.resolved == {"url", "env"} and resolution.unresolved == []


def test_the_path_ends_at_the_second_colon_and_the_key_takes_the_rest() -> None:
    class Echo(ConfigProvider):
        name, params = "Echo", ()

        def get(self, path: str, keys: set[str]) -> Found:
            return Found({key: f"[{path}|{key}]" for key in keys})

    values = resolve({"a": "${echo:/p:k:x}", "b": "${echo:k}", "c": "${echo::k}", "d": "${echo:/p:}"},
                     {"echo": Echo()}).values  # fmt: skip
    assert values == {"a": "[/p|k:x]", "b": "[|k]", "c": "[|k]", "d": "[/p|]"}


def test_an_unconfigured_provider_leaves_its_text_and_a_value_read_is_not_read_again(secrets: Path) -> None:
    (secrets / "nested.properties").write_text("inner=${env:SHOWN}\n")
    resolution = resolve(
        {
            "other": "${vault:secret/db:password}",
            "regex": "^${x}$",
            "nested": f"${{file:{secrets}/nested.properties:inner}}",
        },
        providers(STANDARD, {"SHOWN": "no"}),
    )
    assert resolution.values == {
        "other": "${vault:secret/db:password}",
        "regex": "^${x}$",
        "nested": "${env:SHOWN}",
    }
    assert resolution.unresolved == []  # a provider not configured says nothing: the text is the connector's


# -- the providers ------------------------------------------------------------------------


def test_file_provider_reads_java_properties_and_leaves_a_missing_key_as_it_is(secrets: Path) -> None:
    file = secrets / "app.properties"
    resolution = resolve(
        {
            "long": f"${{file:{file}:long}}",
            "u": f"${{file:{file}:unicode}}",
            "m": f"${{file:{file}:missing}}",
        },
        providers(STANDARD),
    )
    assert resolution.values == {"long": "one two", "u": "café", "m": f"${{file:{file}:missing}}"}
    assert resolution.unresolved == [
        Unresolved("m", f"${{file:{file}:missing}}", f"the file provider has no 'missing' at {file}")
    ]


def test_a_file_that_cannot_be_read_fails_naming_the_setting_and_the_variable_never_a_value(
    secrets: Path,
) -> None:
    gone = secrets / "gone.properties"
    with pytest.raises(VariableError) as failed:
        resolve({"ok": f"${{file:{secrets}/app.properties:password}}", "db.password": f"${{file:{gone}:pw}}"},
                providers(STANDARD))  # fmt: skip
    assert failed.value.problems == [
        f"setting 'db.password': ${{file:{gone}:pw}} could not be resolved: could not read properties from "
        f"file {gone}: [Errno 2] No such file or directory: '{gone}'"
    ]
    assert SECRET not in str(failed.value)


def test_a_problem_found_in_a_resolved_config_never_shows_what_a_provider_read(secrets: Path) -> None:
    file = secrets / "app.properties"
    raw = {"topics": f"orders,${{file:{file}:password}}", "tasks.max": "1"}
    resolution = resolve(raw, providers(STANDARD))
    assert resolution.values["topics"] == f"orders,{SECRET}"
    for message in (
        f"Invalid value orders,{SECRET} for configuration topics: bad",  # Kafka's form
        f"'{SECRET}' is not a valid topic name",  # a part of a list
        f"[orders, {SECRET}] names a topic twice",  # the list as a list
    ):
        shown = resolution.hidden(message, raw)
        assert SECRET not in shown, shown
    assert resolution.hidden("tasks.max must be positive: 1", raw) == "tasks.max must be positive: 1"


def test_directory_provider_reads_a_whole_file_untrimmed_and_only_files_of_that_directory(
    secrets: Path,
) -> None:
    keys = secrets / "keys"
    resolution = resolve({"t": f"${{dir:{keys}:token}}", "up": f"${{dir:{keys}:../app.properties}}",
                          "sub": f"${{dir:{keys}:sub}}", "nodir": f"${{dir:{keys}/token:x}}"},
                         providers(STANDARD))  # fmt: skip
    assert resolution.values["t"] == "  tok-en \n"
    assert [(u.setting, u.reason) for u in resolution.unresolved] == [
        ("up", f"the dir provider has no '../app.properties' at {keys}"),
        ("sub", f"the dir provider has no 'sub' at {keys}"),
        ("nodir", f"the dir provider has no 'x' at {keys}/token ({keys}/token is not a directory)"),
    ]


def test_env_provider_reads_the_variables_its_pattern_allows_and_takes_no_path() -> None:
    environ = {"DB_PASSWORD": SECRET, "DB_USER": "bob", "AWS_SECRET": "no"}
    found = providers({**STANDARD, "config.providers.env.param.allowlist.pattern": "DB_.*"}, environ)
    resolution = resolve({"p": "${env:DB_PASSWORD}", "a": "${env:AWS_SECRET}", "x": "${env:DB_}"}, found)
    assert resolution.values == {"p": SECRET, "a": "${env:AWS_SECRET}", "x": "${env:DB_}"}
    assert [str(u) for u in resolution.unresolved][0] == (
        "setting 'a': ${env:AWS_SECRET} is left as it is: the env provider has no 'AWS_SECRET' "
        "(only variables matching allowlist.pattern 'DB_.*' are read)"
    )
    with pytest.raises(VariableError, match="EnvVarConfigProvider takes no path, and was given 'x'"):
        resolve({"p": "${env:x:DB_USER}"}, found)
    assert SECRET not in repr(found["env"])


def test_a_path_outside_allowed_paths_is_not_read_even_through_dot_dot_or_a_sibling_prefix(
    secrets: Path,
) -> None:
    allowed = secrets / "keys"
    (secrets / "keys2").mkdir()
    (secrets / "keys2" / "token").write_text("sibling")
    found = providers({**STANDARD, "config.providers.file.param.allowed.paths": str(allowed),
                       "config.providers.dir.param.allowed.paths": str(allowed)})  # fmt: skip
    resolution = resolve({
        "in": f"${{dir:{allowed}:token}}", "dotdot": f"${{file:{allowed}/../outside.properties:password}}",
        "sibling": f"${{dir:{secrets}/keys2:token}}", "relative": "${file:outside.properties:password}",
    }, found)  # fmt: skip
    assert resolution.values["in"] == "  tok-en \n"
    assert {u.setting: u.reason.split(" (")[1] for u in resolution.unresolved} == {
        name: "the path is outside allowed.paths, so it is not read)"
        for name in ("dotdot", "sibling", "relative")
    }
    assert AllowedPaths.parse(f" {allowed} ,{secrets}").roots == (str(allowed), str(secrets))
    assert AllowedPaths.parse("").check("anything") == "anything"


def test_reverse_transform_gives_task_configs_back_their_variables() -> None:
    raw = {"topic": "${file:/s.properties:topic}", "tasks.max": "2", "password": "${env:PW}"}
    generated = [{"topic": "orders", "task.index": "0"}, {"topic": "orders", "task.index": "1"}]
    assert with_variables(raw, generated) == [
        {"topic": "${file:/s.properties:topic}", "task.index": "0"},
        {"topic": "${file:/s.properties:topic}", "task.index": "1"},
    ]


# -- the provider settings ----------------------------------------------------------------


def test_kafkas_class_names_and_connects_aliases_name_the_three_providers() -> None:
    names = [
        (PACKAGE + "FileConfigProvider", FileConfigProvider),
        ("DirectoryConfigProvider", DirectoryConfigProvider),
        ("EnvVar", EnvVarConfigProvider),
    ]
    for class_name, kind in names:
        found, problems = parse_providers(
            {"config.providers": "p", "config.providers.p.class": class_name}, {}
        )
        assert problems == [] and isinstance(found["p"], kind)
    assert parse_providers({"config.providers": ""}, {}) == ({}, [])


def test_every_provider_setting_that_cannot_work_or_would_do_nothing_is_named(tmp_path: Path) -> None:
    found, problems = parse_providers({
        "config.providers": "file, vault,env,dir,nop",
        "config.providers.file.class": "FileConfigProvider",
        "config.providers.file.param.allowed.path": "/tmp",
        "config.providers.vault.class": "com.example.VaultConfigProvider",
        "config.providers.env.class": "EnvVarConfigProvider",
        "config.providers.env.param.allowlist.pattern": "[",
        "config.providers.dir.class": "DirectoryConfigProvider",
        "config.providers.dir.param.allowed.paths": f"relative/x,{tmp_path}",
        "config.providers.nop.clas": "FileConfigProvider",
        "config.providers.unlisted.class": "FileConfigProvider",
    }, {})  # fmt: skip
    assert problems == [
        ("config.providers.unlisted.class",
         "'FileConfigProvider' is not used: it names no provider of "
         "config.providers='file, vault,env,dir,nop'"),
        ("config.providers.file.param.allowed.path",
         "'/tmp' is not supported: FileConfigProvider takes allowed.paths only"),
        ("config.providers.vault.class",
         "'com.example.VaultConfigProvider' is not supported: the config providers are Kafka's "
         f"FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider ({PACKAGE}*)"),
        ("config.providers.env.param.allowlist.pattern", "'[': unterminated character set at position 0"),
        ("config.providers.dir.param.allowed.paths",
         f"'relative/x,{tmp_path}': path 'relative/x' is not absolute"),
        ("config.providers",
         "'file, vault,env,dir,nop' names 'nop', which has no config.providers.nop.class"),
        ("config.providers.nop.clas",
         "'FileConfigProvider' is not used: a provider takes config.providers.nop.class and "
         "config.providers.nop.param.<name>"),
    ]  # fmt: skip
    assert set(found) == {"file"}
    with pytest.raises(ValueError, match="does not exist"):
        AllowedPaths.parse(str(tmp_path / "missing"))


# -- the worker's own settings ------------------------------------------------------------


def test_a_worker_resolves_its_own_settings_at_start_and_keeps_its_providers(
    secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONNECT_GROUP", "from-env")
    (secrets / "worker.properties").write_text("topic=configs-from-file\n")
    config = WorkerConfig.from_settings({
        **REQUIRED, "config.providers": "file,env", "config.providers.file.class": "FileConfigProvider",
        "config.providers.env.class": "EnvVarConfigProvider",
        "group.id": "${env:CONNECT_GROUP}",
        "config.storage.topic": f"${{file:{secrets}/worker.properties:topic}}",
        "status.storage.topic": "${env:NOT_SET_ANYWHERE}",
    })  # fmt: skip
    assert (config.group_id, config.config_storage_topic) == ("from-env", "configs-from-file")
    assert config.status_storage_topic == "${env:NOT_SET_ANYWHERE}"
    assert config.setting_warnings == [
        "setting 'status.storage.topic': ${env:NOT_SET_ANYWHERE} is left as it is: "
        "the env provider has no 'NOT_SET_ANYWHERE'"
    ]
    assert set(config.config_providers()) == {"file", "env"}


def test_a_worker_with_bad_provider_settings_or_an_unreadable_variable_does_not_start(
    secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSION_MS", SECRET)
    with pytest.raises(ConfigError) as refused:
        WorkerConfig.from_settings({
            **REQUIRED, "config.providers": "file,env,vault",
            "config.providers.file.class": "FileConfigProvider",
            "config.providers.env.class": "EnvVarConfigProvider", "config.providers.vault.class": "Vault",
            "group.id": f"${{file:{secrets}/nothing.properties:group}}",
            "session.timeout.ms": "${env:SESSION_MS}",
        })  # fmt: skip
    assert [p.split(":")[0] for p in refused.value.problems] == [
        "setting 'config.providers.vault.class'",
        "setting 'group.id'",
        "invalid value for 'session.timeout.ms'",
    ]
    assert SECRET not in str(refused.value)


# -- a connector started in process -------------------------------------------------------


class RecordingSource(Connector):
    """Keeps the config it was started with: what a connector sees of its variables."""

    type = "source"
    task_class = Task
    config_defs = [ConfigDef("topic", required=True)]
    seen: list[dict[str, str]] = []

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        RecordingSource.seen.append(dict(config))
        return [{"topic": config["topic"], "task": str(i)} for i in range(max_tasks)]


async def started_connector(herder: Herder, name: str, config: dict[str, str]) -> dict[str, Any]:
    api = HerderApi(herder)
    await api.create_connector(name, config, "STARTED")
    await herder.runner.start(frozenset({(name, CONNECTOR)}), lambda: _nothing())
    status = api.connector_status(name)
    assert status is not None
    return status


async def _nothing() -> None:
    return None


async def test_a_connector_sees_its_config_resolved_and_the_config_topic_keeps_the_variables(
    secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TASKS", "2")
    (secrets / "connector.properties").write_text("topic=orders\n")
    herder = Herder(WorkerConfig.from_settings({**REQUIRED, "config.providers": "file,env",
                                                "config.providers.file.class": "FileConfigProvider",
                                                "config.providers.env.class": "EnvVarConfigProvider"}),
                    logs=MemoryLogs())  # fmt: skip
    RecordingSource.seen.clear()
    raw = {"connector.class": f"{__name__}.RecordingSource", "name": "rec",
           "topic": f"${{file:{secrets}/connector.properties:topic}}",
           "tasks.max": "${env:TASKS}"}  # fmt: skip
    status = await started_connector(herder, "rec", raw)
    assert status["connector"]["state"] == "RUNNING"
    assert RecordingSource.seen == [{**raw, "topic": "orders", "tasks.max": "2"}]
    assert HerderApi(herder).connector_config("rec") == raw
    assert HerderApi(herder).task_configs("rec") == [
        {"topic": raw["topic"], "task": "0"},
        {"topic": raw["topic"], "task": "1"},
    ]

    missing = {**raw, "topic": f"${{file:{secrets}/gone.properties:topic}}"}
    failed = await started_connector(herder, "broken", {**missing, "name": "broken"})
    assert failed["connector"]["state"] == "FAILED"
    assert (
        f"setting 'topic': ${{file:{secrets}/gone.properties:topic}} could not be resolved"
        in (failed["connector"]["trace"])
    )
    assert HerderApi(herder).task_configs("broken") == []


def test_env_reads_the_workers_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVIDED_HERE", "yes")
    found, _ = parse_providers({"config.providers": "env", "config.providers.env.class": "EnvVar"})
    assert resolve({"x": "${env:PROVIDED_HERE}"}, found).values == {"x": "yes"}


async def test_rest_validates_a_config_as_resolved_and_never_shows_a_value_read(
    monkeypatch: pytest.MonkeyPatch, aiohttp_client: Callable[[web.Application], Awaitable[Any]]
) -> None:
    monkeypatch.setenv("TASKS", "3")
    monkeypatch.setenv("BAD_TASKS", SECRET)
    herder = Herder(WorkerConfig.from_settings({**REQUIRED, "config.providers": "env", "spark.session.warmup":
                                                "false", "config.providers.env.class": "EnvVar"}),
                    logs=MemoryLogs())  # fmt: skip
    herder.ready.set()
    client = await aiohttp_client(RestApi(HerderApi(herder)).app)
    config = {"connector.class": "VerifiableSource", "topic": "out", "tasks.max": "${env:TASKS}"}
    response = await client.put("/connectors/resolved/config", json=config)
    assert response.status == 201, await response.text()
    assert HerderApi(herder).connector_config("resolved") == {**config, "name": "resolved"}

    response = await client.put("/connectors/bad/config", json={**config, "tasks.max": "${env:BAD_TASKS}"})
    body = await response.text()
    assert response.status == 400 and SECRET not in body
    assert "Invalid value ${env:BAD_TASKS} for configuration tasks.max: must be an integer" in body
    response = await client.put("/connector-plugins/VerifiableSource/config/validate",
                                json={**config, "tasks.max": "${env:x:y}"})  # fmt: skip
    validated = await response.json()
    assert validated["error_count"] == 1
    [tasks_max] = [c for c in validated["configs"] if c["definition"]["name"] == "tasks.max"]
    assert tasks_max["value"]["value"] == "${env:x:y}"
    assert tasks_max["value"]["errors"] == [
        "setting 'tasks.max': ${env:x:y} could not be resolved: EnvVarConfigProvider takes no path, and was "
        "given 'x'"
    ]
