"""The group coordinator: a pure state machine (no sockets, no disk, no clock) over groups
and committed offsets. See coordinator.py for its interface and classic.py for the rules
of classic groups."""

from .coordinator import GROUP_APIS, GroupCoordinator
from .requests import GroupRequest, Outcome
from .settings import GroupSettings

__all__ = ["GROUP_APIS", "GroupCoordinator", "GroupRequest", "GroupSettings", "Outcome"]
