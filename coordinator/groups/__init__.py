"""The group coordinator: a pure state machine (no sockets, no disk, no clock) over groups and
committed offsets. `coordinator.py` is the dispatcher and the core's interface; `context.py`
what every part may touch; `classic.py`, `modern/` (with `consumer.py` and `connect.py` as its
flavours) and `classic_bridge.py` the group types; `offsets.py` committed offsets.
Imports only itself and the pure assignors; the group service (`coordinator/group_service.py`)
is its IO edge."""
