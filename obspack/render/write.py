"""Put the pack on disk safely, or compare it with what is there (`--check`).

The promises (tests/render/test_write.py checks each one):
- Nothing outside OUT is touched. Every path below OUT is opened one folder at a time, relative to the
  folder above it, without following symbolic links: a link anywhere under OUT, to a file or a folder, is
  refused, never followed. OUT itself is the path the user gave and may be a link.
- Only obspack's own files are replaced or removed: a regular file whose first lines carry obspack's
  marker. The manifest lists what the last render wrote; it is read as untrusted input (bounded size,
  relative paths without `..`), and an entry that is not one of obspack's files is skipped and reported.
- All or nothing. New files are written into a fresh staging folder inside OUT; then, file by file, the
  old file is moved aside into a backup folder and the new one moved into place. Any failure moves
  everything back, so OUT is exactly as it was, and both folders are removed.
- One writer at a time: an exclusive lock on OUT; a second render at the same time fails at once with a
  clear message, and a render killed half-way leaves folders the next one cleans up.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from obspack.conventions import MARKER
from obspack.errors import RenderError

MANIFEST = ".obspack-manifest"
STAGING = ".obspack-staging-"
BACKUP = ".obspack-backup-"
MAX_MANIFEST_BYTES = 1 << 20  # a real manifest lists about 50 paths
MAX_PATH = 1024
_HEAD = 400  # the marker sits in a file's first lines
_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
Step = Callable[[str], None]


@dataclass(frozen=True)
class Diff:
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # manifest entries that are not obspack's files, and why
    links: list[str] = field(default_factory=list)  # paths under OUT that are links (or not folders/files)

    @property
    def clean(self) -> bool:
        return not (self.missing or self.stale or self.extra)


def manifest_text(paths: list[str]) -> str:
    lines = "\n".join(sorted(paths))
    return f"# {MARKER}: the files it wrote here. It removes those it no longer renders.\n{lines}\n"


def with_manifest(files: dict[str, str]) -> dict[str, str]:
    return {**files, MANIFEST: manifest_text(list(files))}


def safe_relative(rel: str) -> tuple[str, ...] | None:
    """The parts of a relative path that stays inside its folder, or None: absolute, `..`, `.`, empty
    parts, backslashes, NUL or control characters, or too long."""
    if not rel or len(rel) > MAX_PATH or "\\" in rel or any(ord(ch) < 32 or ord(ch) == 127 for ch in rel):
        return None
    path = PurePosixPath(rel)
    parts = path.parts
    if path.is_absolute() or str(path) != rel or any(p in (".", "..") for p in parts):
        return None
    return parts


class _Link(Exception):
    """A path under OUT goes through a symbolic link or something that is not a folder or a file."""


class _Tree:
    """OUT as an open folder; every path below it is reached one component at a time with O_NOFOLLOW."""

    def __init__(self, fd: int, out: Path) -> None:
        self.fd, self.out = fd, out

    @contextmanager
    def folder(self, parts: tuple[str, ...], *, create: bool = False, made: list[tuple[str, ...]] | None = None) -> Iterator[int | None]:
        """An fd of the folder at `parts` (None when it does not exist and `create` is off)."""
        fds: list[int] = []
        current = self.fd
        try:
            for i, name in enumerate(parts):
                try:
                    current = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=current)
                except FileNotFoundError:
                    if not create:
                        yield None
                        return
                    os.mkdir(name, 0o755, dir_fd=current)
                    if made is not None:
                        made.append(parts[: i + 1])
                    current = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=current)
                except OSError as e:
                    if e.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise _Link("/".join(parts[: i + 1])) from None
                    raise
                fds.append(current)
            yield current
        finally:
            for fd in reversed(fds):
                os.close(fd)

    def head(self, parts: tuple[str, ...], limit: int) -> bytes | None:
        """Up to `limit` bytes of the regular file at `parts`; None when it does not exist."""
        with self.folder(parts[:-1]) as parent:
            if parent is None:
                return None
            try:
                fd = os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=parent)
            except FileNotFoundError:
                return None
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                    raise _Link("/".join(parts)) from None
                raise
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise _Link("/".join(parts))
                chunks, size = [], 0
                while size < limit:
                    chunk = os.read(fd, min(1 << 20, limit - size))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                return b"".join(chunks)
            finally:
                os.close(fd)

    def ours(self, parts: tuple[str, ...]) -> bool:
        """Whether the path is a regular file (not a link) that carries obspack's marker."""
        try:
            head = self.head(parts, _HEAD)
        except (_Link, OSError):
            return False
        return head is not None and MARKER.encode() in head


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror}" + (f": {e.filename}" if e.filename else "")
    return str(e) or type(e).__name__


@contextmanager
def _opened(out: Path, *, create: bool) -> Iterator[_Tree | None]:
    try:
        if create:
            out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if create:
            raise RenderError(f"cannot create {out}: a folder above it vanished") from None
        yield None
        return
    except OSError as e:
        raise RenderError(f"cannot open the output folder {out}: {_reason(e)}") from None
    try:
        yield _Tree(fd, out)
    finally:
        os.close(fd)


def _previous(tree: _Tree) -> tuple[set[str], list[str]]:
    """The paths the last render wrote, and the entries skipped with why: the manifest is untrusted."""
    try:
        raw = tree.head((MANIFEST,), MAX_MANIFEST_BYTES + 1)
    except (_Link, OSError):
        return set(), [f"{MANIFEST}: not a regular file, not read"]
    if raw is None:
        return set(), []
    if len(raw) > MAX_MANIFEST_BYTES:
        return set(), [f"{MANIFEST}: larger than {MAX_MANIFEST_BYTES >> 20} MiB, not read"]
    if MARKER.encode() not in raw[:_HEAD]:
        return set(), [f"{MANIFEST}: not written by obspack, not read"]
    owned: set[str] = set()
    skipped: list[str] = []
    for line in raw.decode("utf-8", errors="replace").splitlines()[1:]:
        rel = line.strip()
        if not rel or rel.startswith("#"):
            continue
        if safe_relative(rel) is None or rel.startswith((STAGING, BACKUP)):
            skipped.append(f"{rel[:200]!r}: not a path inside the output folder")
        else:
            owned.add(rel)
    return owned, skipped


def _compare(tree: _Tree | None, files: dict[str, str]) -> Diff:
    files = with_manifest(files)
    result = Diff()
    for rel, text in files.items():
        parts = safe_relative(rel)
        if parts is None:
            raise RenderError(f"obspack would write outside the output folder: {rel!r} (a bug: please report it)")
        data = text.encode("utf-8")
        try:
            current = tree.head(parts, len(data) + 1) if tree is not None else None
        except _Link as e:
            result.stale.append(rel)
            if str(e) not in result.links:
                result.links.append(str(e))
            continue
        except OSError as e:
            raise RenderError(f"cannot read {tree.out / rel if tree else rel}: {_reason(e)}") from None
        if current is None:
            result.missing.append(rel)
        else:
            (result.unchanged if current == data else result.stale).append(rel)
    if tree is not None:
        owned, skipped = _previous(tree)
        result.skipped.extend(skipped)
        for rel in sorted(owned - set(files)):
            parts = safe_relative(rel)
            assert parts is not None
            try:
                exists = tree.head(parts, 0) is not None
            except (_Link, OSError):
                result.skipped.append(f"{rel}: a link, a folder or not a regular file, left alone")
                continue
            if not exists:
                continue
            if tree.ours(parts):
                result.extra.append(rel)
            else:
                result.skipped.append(f"{rel}: does not carry obspack's marker, left alone")
    return result


def diff(out: Path, files: dict[str, str]) -> Diff:
    """What differs between the rendered files (manifest included) and the output folder."""
    with _opened(out, create=False) as tree:
        return _compare(tree, files)


@contextmanager
def _locked(tree: _Tree) -> Iterator[None]:
    try:
        fcntl.flock(tree.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RenderError(
            f"another obspack render is writing {tree.out} right now; wait for it to finish, then run this again"
        ) from None
    except OSError as e:
        raise RenderError(f"cannot lock the output folder {tree.out}: {_reason(e)}") from None
    try:
        yield
    finally:
        fcntl.flock(tree.fd, fcntl.LOCK_UN)


def _remove_tree(parent: int, name: str) -> None:
    """Remove a staging or backup folder of obspack's: its regular files, then the folder (links and
    anything else inside are unlinked, never followed)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        return
    try:
        for entry in os.listdir(fd):
            try:
                os.unlink(entry, dir_fd=fd)
            except IsADirectoryError:
                _remove_tree(fd, entry)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def _leftovers(tree: _Tree) -> None:
    """Staging and backup folders of a render that was killed half-way (we hold the lock: none is live)."""
    for name in sorted(os.listdir(tree.fd)):
        if name.startswith((STAGING, BACKUP)):
            try:
                _remove_tree(tree.fd, name)
            except OSError as e:
                raise RenderError(f"cannot remove {tree.out / name} left by an earlier render: {_reason(e)}") from None


def _fresh_folder(tree: _Tree, prefix: str) -> str:
    for _ in range(100):
        name = f"{prefix}{secrets.token_hex(6)}"
        try:
            os.mkdir(name, 0o700, dir_fd=tree.fd)
            return name
        except FileExistsError:
            continue
    raise RenderError(f"cannot make a staging folder in {tree.out}")


class _Commit:
    """The steps of one write, each recorded so that a failure can undo the ones done."""

    def __init__(self, tree: _Tree, step: Step) -> None:
        self.tree, self.step = tree, step
        self.undo: list[Callable[[], None]] = []
        self.made: list[tuple[str, ...]] = []
        self.staging = self.backup = ""
        self.writes: list[str] = []
        self.failed = False  # the failure happened in this folder

    def prepare(self, change: Diff, files: dict[str, str]) -> None:
        """Stage every new file in a fresh folder inside OUT (nothing visible changes yet)."""
        self.failed = True
        # The manifest goes last, so that a render killed half-way never forgets a file already in place.
        self.writes = sorted(change.missing + change.stale, key=lambda rel: (rel == MANIFEST, rel))
        self.step("staging folders")
        self.staging = _fresh_folder(self.tree, STAGING)
        self.backup = _fresh_folder(self.tree, BACKUP)
        for i, rel in enumerate(self.writes):
            self.stage(i, files[rel].encode("utf-8"))
        self.failed = False

    def apply(self, change: Diff) -> None:
        """Move the staged files into place (the old ones aside) and the files no longer rendered away."""
        self.failed = True
        for i, rel in enumerate(self.writes):
            self.place(i, safe_relative(rel) or (), replaces=rel in change.stale)
        for i, rel in enumerate(change.extra, start=len(self.writes)):
            self.remove(i, safe_relative(rel) or ())
        self.failed = False

    def stage(self, index: int, data: bytes) -> None:
        self.step(f"stage {index}")
        with self.tree.folder((self.staging,)) as folder:
            fd = os.open(str(index), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644, dir_fd=folder)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)

    def _move(self, src: tuple[str, ...], dst: tuple[str, ...], what: str) -> None:
        self.step(what)
        with self.tree.folder(src[:-1]) as a, self.tree.folder(dst[:-1]) as b:
            assert a is not None and b is not None
            os.rename(src[-1], dst[-1], src_dir_fd=a, dst_dir_fd=b)
        self.undo.append(lambda: self._back(dst, src))

    def _back(self, src: tuple[str, ...], dst: tuple[str, ...]) -> None:
        with self.tree.folder(src[:-1]) as a, self.tree.folder(dst[:-1]) as b:
            assert a is not None and b is not None
            os.rename(src[-1], dst[-1], src_dir_fd=a, dst_dir_fd=b)

    def place(self, index: int, parts: tuple[str, ...], replaces: bool) -> None:
        self.step(f"folders of {'/'.join(parts)}")
        with self.tree.folder(parts[:-1], create=True, made=self.made):
            pass
        if replaces:
            self._move(parts, (self.backup, f"{index}"), f"set aside {'/'.join(parts)}")
        self._move((self.staging, str(index)), parts, f"place {'/'.join(parts)}")

    def remove(self, index: int, parts: tuple[str, ...]) -> None:
        self._move(parts, (self.backup, f"{index}"), f"remove {'/'.join(parts)}")

    def roll_back(self) -> list[str]:
        """Undo every step done, newest first; the problems met on the way (normally none)."""
        problems = []
        for undo in reversed(self.undo):
            try:
                undo()
            except OSError as e:
                problems.append(_reason(e))
        for parts in reversed(self.made):
            with self.tree.folder(parts[:-1]) as parent:
                try:
                    os.rmdir(parts[-1], dir_fd=parent)
                except OSError:
                    pass
        return problems

    def clean(self) -> None:
        for name in (self.staging, self.backup):
            if name:
                try:
                    _remove_tree(self.tree.fd, name)
                except OSError:
                    pass


def overlap(a: Path, b: Path) -> str:
    """How two output folders overlap, links followed: "same", "a in b", "b in a", or "" when apart. One
    render into both would replace or remove the other's files."""
    real_a, real_b = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    if real_a == real_b:
        return "same"
    if real_b in real_a.parents:
        return "a in b"
    if real_a in real_b.parents:
        return "b in a"
    return ""


def overlapping(folders: list[Path]) -> str | None:
    """Why output folders cannot be written together (two of them overlap), or None."""
    for i, a in enumerate(folders):
        for b in folders[i + 1 :]:
            how = overlap(a, b)
            if how:
                return {"same": f"{a} and {b} are the same folder", "a in b": f"{a} is inside {b}",
                        "b in a": f"{b} is inside {a}"}[how]  # fmt: skip
    return None


def write(out: Path, files: dict[str, str], *, step: Step = lambda _: None) -> Diff:
    """Write the pack into `out`; returns what changed. Raises RenderError and changes nothing on failure.

    `step` is called with a short name before each change on disk (tests inject failures there)."""
    return write_all([(out, files)], step=step)[0]


def write_all(targets: list[tuple[Path, dict[str, str]]], *, step: Step = lambda _: None) -> list[Diff]:
    """Write several output folders as one: every folder is checked (links, files obspack did not write)
    and staged before any is changed, and a failure in any of them puts every folder back as it was.
    Folders that overlap are refused before anything is written."""
    why = overlapping([out for out, _ in targets])
    if why:
        raise RenderError(f"the output folders overlap: {why}; render them into separate folders")
    with ExitStack() as held:
        trees = []
        for out, _ in targets:
            tree = held.enter_context(_opened(out, create=True))
            assert tree is not None
            held.enter_context(_locked(tree))
            trees.append(tree)
        changes = []
        for tree, (out, files) in zip(trees, targets):
            _leftovers(tree)
            changes.append(_checked(tree, out, files))
        commits = [_Commit(tree, step) for tree in trees]
        try:
            for commit, change, (_, files) in zip(commits, changes, targets):
                commit.prepare(change, with_manifest(files))
            for commit, change in zip(commits, changes):
                commit.apply(change)
        except BaseException as e:
            problems = [p for commit in reversed(commits) for p in commit.roll_back()]
            for commit in commits:
                commit.clean()
            failed = next((c.tree.out for c in commits if c.failed), targets[0][0])
            if isinstance(e, _Link):
                raise RenderError(
                    f"{failed / str(e)} is a link or not a folder: obspack never writes through links "
                    "(replace it with a plain folder, or choose another --out)"
                ) from None
            if not isinstance(e, Exception):
                raise
            where = " and ".join(str(out) for out, _ in targets)
            left = "previous output left as it was" if not problems else (
                f"and undoing it failed too ({'; '.join(problems)}): check {where}"
            )
            raise RenderError(f"writing {where} failed, {left}: {_reason(e)}") from None
        for commit, change in zip(commits, changes):
            commit.clean()
            for rel in change.extra:
                _prune_empty(commit.tree, (safe_relative(rel) or ())[:-1])
    return changes


def _checked(tree: _Tree, out: Path, files: dict[str, str]) -> Diff:
    """What writing `files` into the folder changes, or RenderError for a link where obspack writes or a
    file it did not write."""
    change = _compare(tree, files)
    if change.links:
        raise RenderError(
            f"{', '.join(str(out / p) for p in change.links)}: a link or not a plain folder or file where "
            "obspack writes; it never writes through links (replace it, or choose another --out)"
        )
    foreign = [rel for rel in change.stale if not tree.ours(safe_relative(rel) or ())]
    if foreign:
        raise RenderError(
            f"refusing to overwrite files obspack did not write: {', '.join(foreign)} "
            "(move them away or choose another --out)"
        )
    return change


def _prune_empty(tree: _Tree, parts: tuple[str, ...]) -> None:
    """Remove the folders a removed file leaves empty, up to (never including) OUT."""
    while parts:
        with tree.folder(parts[:-1]) as parent:
            if parent is None:
                return
            try:
                os.rmdir(parts[-1], dir_fd=parent)
            except OSError:
                return
        parts = parts[:-1]
