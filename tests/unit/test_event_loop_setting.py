"""`event.loop`: uvloop by default, asyncio's own loop on request, anything else refused."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from coordinator.configs.coordinator import ConfigError, CoordinatorConfig
from coordinator.configs.event_loop import loop_factory

pytestmark = pytest.mark.unit


def test_uvloop_is_the_default_and_asyncio_can_be_chosen() -> None:
    assert CoordinatorConfig.from_settings({}).event_loop == "uvloop"
    chosen = CoordinatorConfig.from_settings({"event.loop": " AsyncIO "}).event_loop
    assert chosen == "asyncio"
    for name, kind in (("uvloop", uvloop.Loop), ("asyncio", asyncio.BaseEventLoop)):
        loop = loop_factory(name)()
        try:
            assert isinstance(loop, kind) and (name == "uvloop") == isinstance(loop, uvloop.Loop)
        finally:
            loop.close()


def test_an_unknown_event_loop_is_refused_naming_the_setting() -> None:
    with pytest.raises(ConfigError, match="event.loop must be one of uvloop, asyncio; got 'tokio'"):
        CoordinatorConfig.from_settings({"event.loop": "tokio"})
