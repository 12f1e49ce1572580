"""Connector names: Kafka Connect's rule for them, and the one way a name becomes a path.

A name comes from whoever can reach the REST API, so it is checked as Kafka Connect checks
it (its `name` setting's validator, `NonEmptyStringWithoutControlChars`): not empty once
trimmed, and no ISO control character (U+0000-U+001F, U+007F-U+009F), which would break
the `Location` header, log lines and file names. Anything else is a legal name, `/`, `..`
and `%` included, as in Kafka Connect.

Whatever the config topic holds (a name written before this rule, or by another tool), a
name reaches the file system only through `path_segment`: one directory name that never
leaves its parent. The encoding keeps `A-Z a-z 0-9 - _ .` and writes every other byte of
the name's UTF-8 as `%XX`, a leading `.` included (so `.`, `..` and hidden names cannot
arise, and `%2F` in a name is `%252F` on disk, never a separator). It is injective: `%`
is always encoded, so two names never share a directory. A segment longer than file
systems allow (255 bytes) is cut and ends in `~` and the name's SHA-256; `~` is always
encoded otherwise, so a cut segment cannot equal another name's. Names made of the kept
characters (nearly all real ones) are their own segment, so existing checkpoints stay
where they are.
"""

from __future__ import annotations

import hashlib
import string

KEPT = frozenset(string.ascii_letters + string.digits + "-_.")
_UP_TO_SPACE = "".join(map(chr, range(0x21)))
MAX_SEGMENT = 180  # longest segment kept whole; a cut one is this, `~` and 64 hex digits: 245


def is_iso_control(char: str) -> bool:
    """Java's Character.isISOControl."""
    code = ord(char)
    return code <= 0x1F or 0x7F <= code <= 0x9F


def java_trim(name: str) -> str:
    """Java's String.trim, which Kafka Connect applies to a created connector's name: every
    character up to U+0020 is cut from both ends (NUL and newline too, not only spaces)."""
    return name.strip(_UP_TO_SPACE)


def name_problem(name: str) -> str | None:
    """What is wrong with a connector name, in Kafka Connect's words; None for a legal one."""
    if not name.strip():
        return "String may not be empty"
    controls = [str(ord(c)) for c in name if is_iso_control(c)]
    if controls:
        chars = ", ".join(controls)
        return f"String may not contain control sequences but had the following ASCII chars: {chars}"
    return None


def path_segment(name: str) -> str:
    """The one directory name `name` is stored under (see the module docstring)."""
    encoded = "".join(c if c in KEPT else _escaped(c) for c in name)
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    if not encoded or len(encoded) > MAX_SEGMENT:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        encoded = f"{encoded[:MAX_SEGMENT]}~{digest}"
    return encoded


def _escaped(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
