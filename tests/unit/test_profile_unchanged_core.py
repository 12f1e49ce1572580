"""A settled member's heartbeat keeps its profile without copying it, and nothing else does.

For any heartbeat request (each optional field null or set, the same or another client) and
any member profile, the engine's shortcut (`profile_of`) gives exactly the profile the full
update (`profile_from`) gives, for consumer and connect groups; and the shortcut is taken for
the heartbeat a settled member sends (every optional field null, from the same client).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.groups.connect_records import ConnectWorkerSnapshot
from coordinator.groups.modern.engine import ModernGroups
from coordinator.groups.records import ClassicMemberMetadata, ConsumerMemberSnapshot
from coordinator.groups.requests import GroupRequest
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit

HARNESS = GroupHarness()
CONSUMER, CONNECT = HARNESS.core.consumer, HARNESS.core.connect
small = st.sampled_from(["a", "b"])
assignor = st.builds(
    lambda name: SimpleNamespace(name=name, minimum_version=0, maximum_version=1, reason=0,
                                 metadata_version=0, metadata=b"", metadata_bytes=b""), small,
)  # fmt: skip
COMMON = {
    "instance_id": st.none() | small,
    "rebalance_timeout_ms": st.sampled_from([-1, 30000]),
    "client_assignors": st.none() | st.lists(assignor, max_size=1),
}
REQUEST_FIELDS = {
    CONSUMER: {**COMMON, "rack_id": st.none() | small, "subscribed_topic_names": st.none() | st.lists(small),
               "subscribed_topic_regex": st.none() | small, "server_assignor": st.none() | small},
    CONNECT: {**COMMON, "url": st.none() | small},
}  # fmt: skip


SETTLED = {
    CONSUMER: ConsumerMemberSnapshot(None, None, "a", "/127.0.0.1", frozenset({"a"}), None, 30000, None),
    CONNECT: ConnectWorkerSnapshot(None, "http://w1", "a", "/127.0.0.1", 30000, ()),
}


def profiles(engine: ModernGroups[Any]) -> st.SearchStrategy[Any]:
    if engine is CONSUMER:
        return st.builds(
            lambda client, classic, names: ConsumerMemberSnapshot(
                None, None, client, "/127.0.0.1", frozenset(names), None, 30000, None,
                ClassicMemberMetadata(45000, ()) if classic else None,
            ),
            small, st.booleans(), st.lists(small),
        )  # fmt: skip
    return st.builds(
        lambda client, url: ConnectWorkerSnapshot(None, url, client, "/127.0.0.1", 30000, ()), small, small
    )


@pytest.mark.parametrize("engine", [CONSUMER, CONNECT], ids=["consumer", "connect"])
@given(data=st.data())
def test_the_shortcut_gives_the_profile_the_full_update_gives(engine: ModernGroups[Any], data: Any) -> None:
    profile = data.draw(profiles(engine))
    body = SimpleNamespace(**data.draw(st.fixed_dictionaries(REQUEST_FIELDS[engine])))
    request = GroupRequest(1, 0, 1, body, data.draw(small), data.draw(st.sampled_from(["/127.0.0.1", "/h"])))
    assert engine.profile_of(request, profile) == engine.profile_from(request, profile)


@pytest.mark.parametrize("engine", [CONSUMER, CONNECT], ids=["consumer", "connect"])
def test_a_settled_members_heartbeat_keeps_its_profile_object(engine: ModernGroups[Any]) -> None:
    profile = SETTLED[engine]
    body = SimpleNamespace(**{**{name: None for name in REQUEST_FIELDS[engine]}, "rebalance_timeout_ms": -1})
    request = GroupRequest(1, 0, 1, body, profile.client_id, profile.client_host)
    assert engine.profile_of(request, profile) is profile


ANOTHER_ASSIGNOR = SimpleNamespace(name="z", minimum_version=0, maximum_version=1, reason=0,
                                   metadata_version=0, metadata=b"", metadata_bytes=b"")  # fmt: skip
ONE_CHANGE = {"instance_id": "z", "rebalance_timeout_ms": 45000, "rack_id": "z",
              "subscribed_topic_names": ["z"], "subscribed_topic_regex": "z", "server_assignor": "z",
              "url": "http://z", "client_assignors": [ANOTHER_ASSIGNOR]}  # fmt: skip


@pytest.mark.parametrize("engine", [CONSUMER, CONNECT], ids=["consumer", "connect"])
def test_any_one_field_set_on_a_settled_members_heartbeat_updates_its_profile(
    engine: ModernGroups[Any],
) -> None:
    profile = SETTLED[engine]
    settled = {**{n: None for n in REQUEST_FIELDS[engine]}, "rebalance_timeout_ms": -1}
    for name in REQUEST_FIELDS[engine]:
        body = SimpleNamespace(**{**settled, name: ONE_CHANGE[name]})
        request = GroupRequest(1, 0, 1, body, profile.client_id, profile.client_host)
        updated = engine.profile_of(request, profile)
        assert updated == engine.profile_from(request, profile) and updated != profile, name
