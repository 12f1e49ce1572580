"""What a part of the group coordinator may touch, and how its changes are undone.

Group types, the classic bridge and offsets receive a `GroupContext`, never the coordinator:
the groups table, the timers, the settings, member-id generation, the cluster's topics, and
the outcome being built (`emit` a record, `reply` to a request).

Rules
-----
- Records are the only way persistent state changes: `emit(record)` appends the record to
  the outcome and applies it through the same `replay` that rebuilds state at start-up.
- Every change made while handling one request or deadline is journaled (`Journal`):
  replayed records note what they overwrite, timers what they replace, and transient state
  (a classic group's join phase, a computing round) is kept before it is changed. If the
  outcome's records cannot be written, `undo` puts everything back, so memory is never
  ahead of the log.
- Validate before you create: a group enters the table (`add_group`) only once a request for
  it is accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, MutableMapping
from typing import Any, Protocol

from coordinator.groups.group_type import Group
from coordinator.groups.requests import Outcome, Trigger
from coordinator.groups.settings import GroupSettings
from coordinator.groups.timers import Operation, Timers

_MISSING = object()


class TopicsView(Protocol):
    """What groups read of the cluster's metadata."""

    def topic_id(self, name: str) -> str | None: ...
    def partition_count(self, topic_id: str) -> int | None: ...
    def names(self) -> list[str]: ...
    def name_of(self, topic_id: str) -> str | None: ...

    @property
    def version(self) -> int:
        """Changes whenever a topic appears, disappears or grows."""


class Journal:
    """Undo steps for the changes of one request or deadline, newest last.

    A journal that is not `recording` (start-up replay) changes state the same way and keeps
    nothing.
    """

    def __init__(self, recording: bool = True) -> None:
        self.recording = recording
        self._undo: list[Callable[[], None]] = []
        self._kept: set[int] = set()

    def on_undo(self, step: Callable[[], None]) -> None:
        if self.recording:
            self._undo.append(step)

    def set_attr(self, obj: object, name: str, value: Any) -> None:
        if self.recording:
            old = getattr(obj, name)
            self._undo.append(lambda: setattr(obj, name, old))
        setattr(obj, name, value)

    def set_item(self, mapping: MutableMapping[Any, Any], key: Hashable, value: Any) -> None:
        if self.recording:
            self._undo.append(_restore_item(mapping, key, mapping.get(key, _MISSING)))
        mapping[key] = value

    def pop_item(self, mapping: MutableMapping[Any, Any], key: Hashable) -> Any:
        found = mapping.pop(key, _MISSING)
        if found is _MISSING:
            return None
        if self.recording:
            self._undo.append(_restore_item(mapping, key, found))
        return found

    def keep(self, obj: object) -> None:
        """Remember every field of a small mutable object (containers copied one level deep)
        once per journal, so transient state changed in place can be put back."""
        if not self.recording or id(obj) in self._kept:
            return
        self._kept.add(id(obj))
        saved = {name: _copy(value) for name, value in vars(obj).items()}

        def restore() -> None:
            for name, value in saved.items():
                setattr(obj, name, _copy(value))

        self._undo.append(restore)

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()
        self._kept.clear()


def _restore_item(mapping: MutableMapping[Any, Any], key: Hashable, old: Any) -> Callable[[], None]:
    def restore() -> None:
        if old is _MISSING:
            mapping.pop(key, None)
        else:
            mapping[key] = old

    return restore


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, dict | set | list) else value


class GroupContext:
    def __init__(
        self,
        settings: GroupSettings,
        partitions_of: Callable[[str], int | None],
        new_member_id: Callable[[str], str],
        topics: TopicsView | None,
        replay: Callable[[Any], None],
    ) -> None:
        self.settings = settings
        self.partitions_of = partitions_of
        self.new_member_id = new_member_id
        self.topics = topics
        self.groups: dict[str, Group] = {}
        # Dynamic group configuration by group name, apart from the groups (group_configs.py).
        self.group_configs: dict[str, dict[str, str]] = {}
        self.timers = Timers()
        self.modern_members = 0  # members of consumer and connect groups, for adaptive heartbeats
        self._replay = replay
        self._loading = Outcome(journal=Journal(recording=False))  # start-up replay keeps nothing
        self.current = self._loading

    # -- one request's or deadline's outcome, and the journal that can take it back ---------

    def begin(self) -> Outcome:
        self.current = Outcome(journal=Journal())
        return self.current

    def end(self) -> None:
        self.current = self._loading

    @property
    def journal(self) -> Journal:
        return self.current.journal  # type: ignore[no-any-return]

    # -- what parts do --------------------------------------------------------------------

    def emit(self, record: Any) -> None:
        """Write a record: it joins the outcome and is applied as start-up replay applies it."""
        self.current.records.append(record)
        self._replay(record)

    def write(self, record: Any) -> None:
        """Write a record that states what memory already holds (a classic group's snapshot)."""
        self.current.records.append(record)

    def effect(self, effect: Any) -> None:
        """Ask the IO shell for work too heavy for the event loop; its result comes back as an
        input. An outcome taken back asks for nothing."""
        self.current.effects.append(effect)

    def reply(self, request_id: int, fields: dict[str, Any]) -> None:
        self.current.reply(request_id, fields)

    def triggered(self, group_id: str, cause: str, member_id: str = "") -> None:
        """Say why the group's epoch is being bumped (start-up replay bumps nothing)."""
        if self.current is not self._loading:
            if self.current.triggers is None:
                self.current.triggers = {}
            self.current.triggers.setdefault(group_id, []).append(Trigger(cause, member_id))

    def add_group(self, group: Any) -> None:
        self.journal.set_item(self.groups, group.group_id, group)

    def schedule(self, key: Hashable, deadline_ms: int, operation: Operation) -> None:
        self._note_timer(key)
        self.timers.schedule(key, deadline_ms, operation)

    def cancel(self, key: Hashable) -> None:
        if self.timers.deadline(key) is not None:
            self._note_timer(key)
            self.timers.cancel(key)

    def _note_timer(self, key: Hashable) -> None:
        previous = self.timers.entry(key)

        def restore() -> None:
            if previous is None:
                self.timers.cancel(key)
            else:
                self.timers.schedule(key, *previous)

        self.journal.on_undo(restore)
