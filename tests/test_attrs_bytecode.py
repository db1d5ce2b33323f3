"""attrs' generated methods from the bytecode file: the same code as attrs compiles, compiled once, and a
bad, missing or unwritable file costing only speed. Each test imports a fresh module of attrs classes
(grafanalib is imported once per process, so it cannot be imported fresh here) with the file in tmp_path."""

from __future__ import annotations

import builtins
import itertools
import os
import stat
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import attr
import attr._make
import pytest

from obspack import attrs_bytecode

SAMPLE = '''
from __future__ import annotations
import attr

@attr.s
class Panel:
    title: str = attr.ib(validator=attr.validators.instance_of(str))
    span: int = attr.ib(default=12, validator=attr.validators.instance_of(int))

@attr.s(frozen=True)
class Target:
    expr = attr.ib()
    legend = attr.ib(default="")
'''
_names = itertools.count()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "pycache" / "attrs-methods.bin"
    monkeypatch.setattr(attrs_bytecode, "cache_file", lambda: path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.syspath_prepend(str(tmp_path))
    return path


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The file names of attrs' generated scripts that get compiled, by whichever code compiles them (the
    caller's __future__ flags kept, as compile() inherits them)."""
    seen: list[str] = []
    real = builtins.compile

    def spy(source, filename, mode, flags=0, dont_inherit=False, **kw):  # type: ignore[no-untyped-def]
        if str(filename).startswith("<attrs generated"):
            seen.append(str(filename))
        if not dont_inherit:
            flags |= sys._getframe(1).f_code.co_flags & attrs_bytecode._FUTURE_FLAGS
        return real(source, filename, mode, flags, True, **kw)

    monkeypatch.setattr(builtins, "compile", spy)
    yield seen


def _fresh(tmp_path: Path) -> str:
    name = f"attrs_sample_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(SAMPLE)
    return name


def _again(name: str) -> types.ModuleType:
    sys.modules.pop(name, None)
    return attrs_bytecode.import_module(name)


def _works(module: types.ModuleType) -> None:
    p = module.Panel("KV cache")
    assert (p.span, repr(p)) == (12, "Panel(title='KV cache', span=12)")
    assert module.Target("up") == module.Target("up") != module.Target("down")
    with pytest.raises(TypeError):
        module.Panel(3)


def test_first_import_compiles_and_writes_then_the_next_compiles_nothing(
    tmp_path: Path, cache: Path, compiled: list[str]
) -> None:
    name = _fresh(tmp_path)
    _works(attrs_bytecode.import_module(name))
    assert len(compiled) == 2 and cache.is_file()
    assert len(attrs_bytecode.read(cache)) == 2
    written = cache.stat().st_mtime_ns

    compiled.clear()
    _works(_again(name))
    assert compiled == []
    assert cache.stat().st_mtime_ns == written  # nothing new: not rewritten


def test_the_code_from_the_file_is_the_code_attrs_compiles(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """attrs' module has `from __future__ import annotations`, which its compile() passes on to the
    generated methods: the file's code equals, field by field, what attrs' own compile() call returns in a
    plain import (caught at the builtin, with the flags it inherits from attrs' frame)."""
    name = _fresh(tmp_path)
    attrs_bytecode.import_module(name)
    table = attrs_bytecode.read(cache)

    own: dict[str, types.CodeType] = {}
    real = builtins.compile

    def attrs_compile(source, filename, mode, flags=0, dont_inherit=False, **kw):  # type: ignore[no-untyped-def]
        caller = sys._getframe(1).f_code
        inherited = 0 if dont_inherit else caller.co_flags & attrs_bytecode._FUTURE_FLAGS
        code = real(source, filename, mode, flags | inherited, True, **kw)
        if caller is attr._make._compile_and_eval.__code__:
            own[attrs_bytecode.key(source, filename, flags | inherited)] = code
        return code

    sys.modules.pop(name)
    monkeypatch.setattr(builtins, "compile", attrs_compile)
    __import__(name)  # attrs as it is, unhooked
    monkeypatch.undo()
    assert len(own) == 2 and own.keys() == table.keys()
    for k, code in own.items():
        assert table[k] == code
        assert table[k].co_flags == code.co_flags
    assert attr._make._compile_and_eval.__code__.co_flags & attrs_bytecode._FUTURE_FLAGS  # the flags at stake


def test_one_file_per_optimisation_level() -> None:
    names = {
        level: subprocess.run(
            [sys.executable, *level, "-c", "from obspack import attrs_bytecode; print(attrs_bytecode.cache_file().name)"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        for level in ((), ("-O",), ("-OO",))
    }
    tag = sys.implementation.cache_tag
    assert names == {(): f"attrs-methods.{tag}.bin", ("-O",): f"attrs-methods.{tag}.opt-1.bin", ("-OO",): f"attrs-methods.{tag}.opt-2.bin"}


def test_the_file_is_written_as_python_writes_bytecode(tmp_path: Path) -> None:
    """The module's permissions less the umask, through a new file renamed over the old: a link at the
    path is replaced, never written through."""
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours\n")
    path = tmp_path / "pycache" / "attrs-methods.bin"
    path.parent.mkdir()
    path.symlink_to(outside)
    old = os.umask(0o077)
    try:
        assert attrs_bytecode.write(path, {})
    finally:
        os.umask(old)
    assert outside.read_text() == "not ours\n"
    assert not path.is_symlink() and attrs_bytecode.read(path) == {}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["attrs-methods.bin"]  # no temporary file left


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"garbage\x00\xff" * 100, id="garbage"),
        pytest.param(attrs_bytecode._FORMAT + b"\x00\x00\r\n" + b"{}", id="another-python"),
        pytest.param("truncated", id="truncated"),
        pytest.param("not-a-table", id="not-a-table"),
        pytest.param("oversized", id="oversized"),
    ],
)
def test_a_bad_file_costs_only_the_compiling(
    tmp_path: Path, cache: Path, compiled: list[str], content: bytes | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = attrs_bytecode._header()
    if content == "truncated":
        name = _fresh(tmp_path)
        attrs_bytecode.import_module(name)
        content = cache.read_bytes()[:-40]
    elif content == "not-a-table":
        import marshal

        content = head + marshal.dumps({"x": "not code"})
    elif content == "oversized":
        monkeypatch.setattr(attrs_bytecode, "_MAX_BYTES", 64)
        content = head + b"\x00" * 65
    assert isinstance(content, bytes)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(content)
    assert attrs_bytecode.read(cache) == {}

    compiled.clear()
    _works(attrs_bytecode.import_module(_fresh(tmp_path)))
    assert len(compiled) == 2
    monkeypatch.setattr(attrs_bytecode, "_MAX_BYTES", 16 << 20)
    assert len(attrs_bytecode.read(cache)) == 2  # replaced by a good one


def test_no_file_with_dont_write_bytecode(
    tmp_path: Path, cache: Path, compiled: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    _works(attrs_bytecode.import_module(_fresh(tmp_path)))
    assert len(compiled) == 2 and not cache.exists()


def test_an_unwritable_folder_costs_only_the_compiling(
    tmp_path: Path, compiled: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder would be\n")
    monkeypatch.setattr(attrs_bytecode, "cache_file", lambda: blocker / "attrs-methods.bin")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.syspath_prepend(str(tmp_path))
    _works(attrs_bytecode.import_module(_fresh(tmp_path)))
    assert len(compiled) == 2
    assert blocker.read_text() == "a file where the cache folder would be\n"


def test_an_attrs_without_the_hooked_step_imports_untouched(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def other(source: str, namespace: dict) -> None:  # a different signature: not the step hooked here
        raise AssertionError("never called")

    monkeypatch.setattr(attr._make, "_compile_and_eval", other)
    with attrs_bytecode._answered({}, {}) as hooked:
        assert hooked is False
        assert attr._make._compile_and_eval is other
    assert not cache.exists()


def test_the_hook_is_removed_after_the_import(tmp_path: Path, cache: Path) -> None:
    before = attr._make._compile_and_eval
    attrs_bytecode.import_module(_fresh(tmp_path))
    assert attr._make._compile_and_eval is before


def test_the_file_sits_beside_obspacks_bytecode() -> None:
    path = attrs_bytecode.cache_file()
    assert path.name == f"attrs-methods.{sys.implementation.cache_tag}.bin"
    assert path.parent.name == "__pycache__" or sys.pycache_prefix is not None
