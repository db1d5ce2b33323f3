"""Read a YAML config file into plain data plus the line of every key, or say in one line why not.

What can go wrong before any setting is looked at, each a ConfigError naming FILE or FILE:LINE: the file
cannot be read, is too big, is not UTF-8 text, is not YAML, nests too deeply, holds too many values, or
repeats a key.

Parsing uses libyaml through PyYAML's C loader when it is present (PyYAML's pure-Python scanner spends
seconds on a single multi-megabyte string). Anchors and aliases are resolved the YAML way; a setting
that comes from an alias is located at the line that uses the alias.
"""

from __future__ import annotations

import errno
import os
import re
import select
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from obspack.errors import ConfigError

MAX_BYTES = 16 * 1024 * 1024  # a complete obspack.yaml is a few KB
MAX_DEPTH = 64  # the deepest setting is four levels down
MAX_VALUES = 10_000
WAIT_S = 10.0  # a pipe's or FIFO's writer (`--config <(...)`) has this long to send the whole config
KeyPath = tuple[str, ...]

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # type: ignore[assignment]


class _ConfigLoader(_Loader):  # type: ignore[misc, valid-type]
    """Safe loading, plus YAML 1.2 floats: PyYAML reads `1e-3` or `1e400` as text, YAML 1.2 as numbers."""


_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


@dataclass
class Source:
    """The parsed file: its data, the line of each key path, and the problems found on the way."""

    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def line(self, loc: tuple[Any, ...]) -> int:
        """Line of the key at `loc`, or of its nearest ancestor that has one (a key inside an alias)."""
        parts = tuple(str(p) for p in loc)
        for cut in range(len(parts), -1, -1):
            if parts[:cut] in self.lines:
                return self.lines[parts[:cut]]
        return 1


def _read_text(path: Path) -> str:
    name = str(path)
    try:
        raw = _read_bytes(path)
    except OSError as e:
        raise ConfigError([f"{name}: cannot read the config file ({e.strerror})"]) from None
    if len(raw) > MAX_BYTES:
        raise ConfigError([f"{name}: the config file is larger than {MAX_BYTES // 2**20} MiB (a complete one is a few KB)"])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ConfigError(
            [f"{name}:{line}: the config is not UTF-8 text (byte 0x{raw[e.start]:02x}); save it as UTF-8"]
        ) from None


def _read_bytes(path: Path) -> bytes:
    """Up to MAX_BYTES + 1 bytes of the file. A FIFO, socket or terminal (`<(...)`, `/dev/stdin`) is read as
    it comes, for at most WAIT_S in all: a FIFO nobody writes would otherwise block its reader forever."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))  # a FIFO's open never waits
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.set_blocking(fd, True)
            return _read_all(fd, lambda got: None)
        ends = time.monotonic() + WAIT_S
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)

        def wait(got: int) -> None:
            # Linux reports no hang-up on a FIFO that never had a writer: poll waits for one, until the end.
            if not poller.poll(max(0, int((ends - time.monotonic()) * 1000))):
                why = (
                    f"nothing was written to it within {WAIT_S:g}s: a FIFO or pipe that nobody writes"
                    if not got
                    else f"its writer sent {got} bytes and did not finish within {WAIT_S:g}s"
                )
                raise OSError(errno.ETIMEDOUT, why)

        return _read_all(fd, wait)
    finally:
        os.close(fd)


def _read_all(fd: int, wait: Callable[[int], None]) -> bytes:
    chunks, size = [], 0
    while size <= MAX_BYTES:
        wait(size)
        try:
            chunk = os.read(fd, min(1 << 20, MAX_BYTES + 1 - size))
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def load(path: Path) -> Source:
    """Parse the file; ConfigError for anything that is not a readable YAML document."""
    name = str(path)
    text = _read_text(path)
    try:
        _check_shape(text, name)
        loader = _ConfigLoader(text)
        try:
            node = loader.get_single_node()
            source = Source(data=None)
            if node is not None:
                _walk(node, source)
                source.data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        line, problem = _error_at(e, text)
        raise ConfigError([f"{name}:{line}: not valid YAML ({problem})"]) from None
    source.problems = [f"{name}:{p}" for p in source.problems]
    return source


def _error_at(error: yaml.YAMLError, text: str) -> tuple[int, str]:
    """Line and one-line reason of a YAML error."""
    if isinstance(error, yaml.reader.ReaderError):
        char = chr(error.character) if isinstance(error.character, int) else str(error.character)
        return text.count("\n", 0, error.position) + 1, f"{error.reason} {char!r}"
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    if mark is not None and _at(text, mark.line, mark.column) == "\t":
        return mark.line + 1, f"a tab at column {mark.column + 1}: YAML indents with spaces, never tabs"
    return (mark.line + 1 if mark is not None else 1), " ".join(str(problem).split())


def _at(text: str, line: int, column: int) -> str:
    """The character at a mark's line and column, or ''."""
    lines = text.split("\n")
    return lines[line][column : column + 1] if 0 <= line < len(lines) else ""


def _check_shape(text: str, name: str) -> None:
    """Refuse deep nesting and huge numbers of values from the event stream, before anything is built:
    libyaml's composer recurses (deep nesting crashes the interpreter), and building and checking a
    million values takes minutes where a complete config has a few hundred."""
    depth = values = 0
    for event in yaml.parse(text, Loader=_ConfigLoader):
        if isinstance(event, yaml.NodeEvent):
            values += 1
            if values > MAX_VALUES:
                line = event.start_mark.line + 1
                raise ConfigError([f"{name}:{line}: more than {MAX_VALUES} keys and values (a complete config has about 250)"])
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1
                raise ConfigError([f"{name}:{line}: nested more than {MAX_DEPTH} levels deep (settings are at most 4)"])
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _walk(root: yaml.Node, source: Source) -> None:
    """Record the line of every key path, visiting each node once: aliases are shared nodes, and a walk
    into each use would take exponential time on nested aliases and never end on a recursive one."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(reversed(_entries(node, path, source)))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in reversed(list(enumerate(node.value))):
                source.lines.setdefault((*path, str(i)), item.start_mark.line + 1)
                stack.append((item, (*path, str(i))))


def _entries(node: yaml.MappingNode, path: KeyPath, source: Source) -> list[tuple[yaml.Node, KeyPath]]:
    """Key lines of one mapping, duplicates reported; `<<` merge keys lend their keys to this mapping."""
    names: set[str] = set()
    children = []
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue  # a list or mapping as a key: the constructor refuses it with its line
        line = key.start_mark.line + 1
        if key.tag == "tag:yaml.org,2002:merge":
            for merged in (value.value if isinstance(value, yaml.SequenceNode) else [value]):
                if isinstance(merged, yaml.MappingNode):
                    for k, _ in merged.value:
                        if isinstance(k, yaml.ScalarNode):
                            source.lines.setdefault((*path, k.value), line)
            continue
        if key.value in names:
            source.problems.append(f"{line}: {'.'.join((*path, key.value))}: duplicate key")
        names.add(key.value)
        source.lines[(*path, key.value)] = line
        children.append((value, (*path, key.value)))
    return children
