"""curl, as an operator calls a worker's REST API: the status and the JSON body back."""

from __future__ import annotations

import json
import subprocess


def curl(method: str, url: str, body: object = None) -> tuple[int, object]:
    """The status and the decoded JSON body (None when there is none); `body` is sent as JSON."""
    command = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-X", method, url]
    if body is not None:
        command += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True).stdout
    text, _, status = out.rpartition("\n")
    return int(status), (json.loads(text) if text else None)
