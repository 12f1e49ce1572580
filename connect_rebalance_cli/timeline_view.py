"""`connect-rebalance groups timeline GROUP`: a group's last rebalances, read from the
coordinator's admin port (`GET /groups/{group}/timeline`), one row per rebalance:

    EPOCH  STARTED       EVENTS
    7 → 8  09:14:02.113  join w4  +0.21 s w1 revoked A-3  +0.30 s w4 assigned A-3  +0.40 s balanced

Events are the triggers (after the first, with the time they came), then each member that
gave something up or was given something, at the time it reached the new epoch (a member
that left: at once), then the time to balance. Members with nothing moved are left out;
`--output json` prints every entry whole. An https admin URL is trusted with the TLS settings
of `--command-config` (Kafka's client names: ssl.truststore.*, ssl.keystore.* for a port
that asks for a client certificate).
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

COLUMNS = [("EPOCH", "epochs"), ("STARTED", "started"), ("EVENTS", "events")]
DEFAULT_ADMIN_URL = "http://127.0.0.1:9644"


def fetch(admin_url: str, group: str, context: ssl.SSLContext | None) -> dict[str, Any]:
    """The group's timeline; a ValueError with the coordinator's message when it has none."""
    url = f"{admin_url.rstrip('/')}/groups/{urllib.parse.quote(group, safe='')}/timeline"
    try:
        with urllib.request.urlopen(url, timeout=30, context=context) as reply:
            return json.loads(reply.read())  # type: ignore[no-any-return]
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read())["message"]
        except (ValueError, KeyError, TypeError):
            message = f"{url}: HTTP {exc.code}"
        raise ValueError(message) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise ValueError(f"cannot reach the admin port {admin_url}: {exc}") from exc


def _seconds(ms: int) -> str:
    return f"+{ms / 1000:.2f} s"


def _member_moves(member: dict[str, Any]) -> str:
    parts = [f"{what} {','.join(member[what])}" for what in ("revoked", "assigned") if member[what]]
    return f"{member['member']} {', '.join(parts)}"


def events(entry: dict[str, Any], balanced: bool = True) -> str:
    triggers = entry["triggers"]
    said = [
        " ".join(filter(None, [_seconds(t["at_ms"]) if i else "", t["cause"], t["member"]]))
        for i, t in enumerate(triggers)
    ]
    moved = [m for m in entry.get("members", ()) if m["revoked"] or m["assigned"]]
    said += [_member_moves(m) for m in moved if m["reached_ms"] is None]
    reached = sorted((m for m in moved if m["reached_ms"] is not None), key=lambda m: m["reached_ms"])
    said += [f"{_seconds(m['reached_ms'])} {_member_moves(m)}" for m in reached]
    said.append(f"{_seconds(entry['time_to_balance_ms'])} balanced" if balanced else "under way")
    return "  ".join(said)


def _started(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%H:%M:%S.%f")[:-3]


def rows(timeline: dict[str, Any]) -> list[dict[str, Any]]:
    shown = [
        {"epochs": f"{e['from_epoch']} → {e['to_epoch']}", "started": _started(e["started_ms"]),
         "events": events(e)}
        for e in timeline["rebalances"]
    ]  # fmt: skip
    under_way = timeline.get("under_way")
    if under_way is not None:
        shown.append({
            "epochs": f"{under_way['from_epoch']} → {under_way['to_epoch']}",
            "started": _started(under_way["started_ms"]),
            "events": events(under_way, balanced=False),
        })  # fmt: skip
    return shown


def tls_context(command_config: str | None) -> ssl.SSLContext | None:
    if command_config is None:
        return None
    # Loaded here, as the tables below: the command line's options are built without them.
    from connect_rebalance.client_security import ClientSecurity
    from connect_rebalance.properties import read_properties

    settings = {"security.protocol": "SSL", **read_properties(Path(command_config))}
    return ClientSecurity.parse(settings).ssl_context()


def run(args: argparse.Namespace) -> int:
    from .tables import emit

    try:
        context = tls_context(args.command_config)
    except (ValueError, OSError) as exc:
        print(f"error: --command-config {args.command_config}: {exc}", file=sys.stderr)
        return 2
    try:
        timeline = fetch(args.admin_url, args.group, context)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        emit(COLUMNS, timeline["rebalances"], "json")
    elif not timeline["rebalances"] and timeline.get("under_way") is None:
        print(f"Group {args.group} has not rebalanced since the coordinator started.")
    else:
        emit(COLUMNS, rows(timeline), "table")
    return 0


def add_parser(gsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = gsub.add_parser(
        "timeline", help="a group's last rebalances: why, what moved, when each member was ready"
    )
    parser.add_argument("group", metavar="GROUP", help="the group (any type)")
    parser.add_argument(
        "--admin-url", default=DEFAULT_ADMIN_URL, metavar="URL",
        help="the coordinator's admin port (its admin.listeners)",
    )  # fmt: skip
    parser.add_argument(
        "--command-config",
        help="TLS settings (Kafka client names) for an https admin port, as a properties file",
    )
