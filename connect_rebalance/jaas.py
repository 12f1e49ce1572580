"""JAAS configuration text, as Kafka reads it: `sasl.jaas.config` and JAAS files.

A client's `sasl.jaas.config` is one or more login modules, each `<class> <flag> name="value"
...;`. A JAAS file (Kafka Connect's REST basic authentication reads one) wraps modules in
named sections, `KafkaConnect { <module> ... };`, and may carry `//` and `/* */` comments.
Values are bare words or double-quoted strings with backslash escapes. Only parsing lives
here; what a module's options mean is its user's business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r'\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<punct>[{};=])|(?P<word>[^\s{};="]+))', re.S)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def simple_name(self) -> str:
        return self.class_name.rpartition(".")[2]


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, pos, text = [], 0, text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"cannot parse JAAS text at character {pos}")  # the text holds passwords
        kind = match.lastgroup or ""
        value = match.group(kind)
        if kind == "quoted":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        tokens.append((kind, value))
        pos = match.end()
    return tokens


def _modules(tokens: list[tuple[str, str]], pos: int, stop: str | None) -> tuple[list[LoginModule], int]:
    modules = []
    while pos < len(tokens) and tokens[pos] != ("punct", stop):
        if pos + 1 >= len(tokens) or tokens[pos][0] != "word" or tokens[pos + 1][0] != "word":
            raise ValueError("a JAAS login module is `<class> <flag> name=value ...;`")
        module, pos = LoginModule(tokens[pos][1], tokens[pos + 1][1].lower()), pos + 2
        while pos < len(tokens) and tokens[pos] != ("punct", ";"):
            if pos + 2 >= len(tokens) or tokens[pos + 1] != ("punct", "=") or tokens[pos][0] != "word":
                raise ValueError(f"JAAS option of {module.class_name} is not name=value")
            module.options[tokens[pos][1]] = tokens[pos + 2][1]
            pos += 3
        if pos >= len(tokens):
            raise ValueError(f"JAAS login module {module.class_name} does not end with `;`")
        modules.append(module)
        pos += 1
    return modules, pos


def parse_modules(text: str) -> list[LoginModule]:
    """The login modules of a `sasl.jaas.config` value."""
    modules, pos = _modules(_tokens(text), 0, None)
    if not modules:
        raise ValueError("the JAAS configuration names no login module")
    return modules


def parse_file(text: str) -> dict[str, list[LoginModule]]:
    """A JAAS file's sections: `Name { modules };`."""
    tokens, pos, sections = _tokens(_COMMENTS.sub("", text)), 0, {}
    while pos < len(tokens):
        if pos + 1 >= len(tokens) or tokens[pos][0] != "word" or tokens[pos + 1] != ("punct", "{"):
            raise ValueError("a JAAS file is made of `Name { <login modules> };` sections")
        name = tokens[pos][1]
        sections[name], pos = _modules(tokens, pos + 2, "}")
        if pos >= len(tokens):
            raise ValueError(f"JAAS section {name} does not end with `}};`")
        pos += 2 if pos + 1 < len(tokens) and tokens[pos + 1] == ("punct", ";") else 1
    return sections
