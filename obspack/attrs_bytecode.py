"""attrs' generated methods kept compiled between processes, the way Python keeps a module's bytecode.

attrs writes the methods of every class it decorates (`__init__`, `__repr__`, `__eq__`) as Python source
and compiles that source when the class is defined. grafanalib defines about a hundred such classes: some
300 KB of source, compiled again in every process, an eighth of a render's time. `import_module(name)`
imports a module with those compilations answered from one file beside obspack's own bytecode, and
rewrites the file when the module's classes asked for code it does not hold.

The file follows Python's rules for `.pyc` files: it sits in obspack's `__pycache__` folder (under
`PYTHONPYCACHEPREFIX` when that is set), is never written with `PYTHONDONTWRITEBYTECODE` or where the folder
cannot be written, is valid only for the Python that wrote it (its bytecode magic number), and has one file
per optimisation level (`-O`, `-OO`), as `.pyc` files do. Each entry is keyed by the exact file name, source
and `__future__` flags that attrs compiles with, so a changed attrs or grafanalib misses. `pip uninstall`
leaves the file behind, as it leaves any bytecode written after the install.
A missing, foreign, oversized or damaged file costs only the compiling it would have saved; where attrs
no longer compiles through the function this hooks, the import runs untouched.
"""

from __future__ import annotations
import __future__

import importlib
import importlib.util
import marshal
import os
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_FORMAT = b"obspack attrs bytecode 1\n"
_MAX_BYTES = 16 << 20  # grafanalib's methods and their sources take about 0.8 MB
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag

Table = dict[str, types.CodeType]  # "flags NUL file name NUL source" (key()) -> its code


def cache_file() -> Path:
    """Where the compiled methods live: beside this module's own bytecode, tagged with the interpreter and
    the optimisation level."""
    pyc = Path(importlib.util.cache_from_source(__file__))
    level = sys.flags.optimize
    return pyc.with_name(f"attrs-methods.{sys.implementation.cache_tag}{f'.opt-{level}' if level else ''}.bin")


def _header() -> bytes:
    return _FORMAT + importlib.util.MAGIC_NUMBER


def read(path: Path) -> Table:
    """The table in `path`, or an empty one where the file is missing, too large, or not one of ours for
    this Python."""
    try:
        with path.open("rb") as f:
            data = f.read(_MAX_BYTES + 1)
    except OSError:
        return {}
    head = _header()
    if len(data) > _MAX_BYTES or not data.startswith(head):
        return {}
    try:
        table = marshal.loads(data[len(head) :])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, types.CodeType) for k, v in table.items()
    ):
        return {}
    return table


def write(path: Path, table: Table) -> bool:
    """Replace `path` with `table` in one step, as Python writes a `.pyc`: a new file beside it, created with
    this module's permissions less the umask, then renamed over it (a reader sees the old file or the new
    one; a link at `path` is replaced, not written through). False where the folder cannot be written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        mode = (os.stat(__file__).st_mode | 0o200) & 0o666
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_EXCL | os.O_CREAT | os.O_WRONLY, mode)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_header() + marshal.dumps(table))
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return True
    except OSError:
        return False


def key(source: str, filename: str, flags: int) -> str:
    return f"{flags}\0{filename}\0{source}"


@contextmanager
def _answered(table: Table, used: Table) -> Iterator[bool]:
    """While active, attrs' compile-and-run step takes its code from `table` (compiling what is missing);
    every piece of code it runs is put in `used`. Yields False, hooking nothing, where attrs has no such step."""
    make = sys.modules.get("attr._make")
    original = getattr(make, "_compile_and_eval", None)
    code = getattr(original, "__code__", None)
    if code is None or (code.co_argcount, code.co_kwonlyargcount, code.co_varnames[:4]) != (
        4, 0, ("script", "globs", "locs", "filename")
    ):
        yield False
        return
    # compile() inherits the __future__ statements of the module calling it: those of attrs' module
    flags = code.co_flags & _FUTURE_FLAGS

    def compile_and_eval(script: str, globs: dict | None, locs: object = None, filename: str = "") -> None:
        k = key(script, filename, flags)
        compiled = table.get(k)
        if compiled is None:
            compiled = compile(script, filename, "exec", flags=flags, dont_inherit=True)
        used[k] = compiled
        eval(compiled, globs, locs)  # noqa: S307 - the code attrs generated, as attrs runs it

    make._compile_and_eval = compile_and_eval  # type: ignore[union-attr]
    try:
        yield True
    finally:
        make._compile_and_eval = original  # type: ignore[union-attr]


def import_module(name: str) -> types.ModuleType:
    """Import `name` (a module defining attrs classes) with its classes' methods compiled once per install."""
    if name in sys.modules:
        return sys.modules[name]
    import attr  # noqa: F401 - attrs' own module, whose compile step is answered

    path = cache_file()
    table = read(path)
    used: Table = {}
    with _answered(table, used) as hooked:
        module = importlib.import_module(name)
    if hooked and used.keys() != table.keys() and not sys.dont_write_bytecode:
        write(path, used)
    return module
