"""`load`: compile C++ sources into a kernel library (cached), then `load_library` it.

The cache key is a hash of the sources' contents, the flags, the compiler's
version, customop's headers and TVM-FFI's version: an unchanged build is found
by name and loaded without running the compiler. Each key has its own file
name, so a rebuilt library never collides with one this process has loaded.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from customop.cpp._load import load_library
from customop.cpp._paths import build_flags, include_path
from customop.dispatch import Dispatcher, RegistrationHandle
from customop.exceptions import BuildError

__all__ = ["build", "load"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHOWN_LINES = 20


def load(
    name: str,
    sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    extra_cflags: Iterable[str] = (),
    extra_ldflags: Iterable[str] = (),
    build_directory: str | os.PathLike[str] | None = None,
    verbose: bool = False,
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle:
    """Compile ``sources`` into a library named ``name`` (unless cached), and load it.

    Like ``torch.utils.cpp_extension.load``: the system C++ compiler (``$CXX``,
    else ``c++``, ``g++`` or ``clang++``) builds a shared object against
    ``customop.cpp.include_path()`` and TVM-FFI; a second call with the same
    sources and flags loads the cached build without compiling.

    Args:
        name: the library's name (an identifier), used in its file name.
        sources: the C++ files.
        extra_cflags: more compiler flags (``-O3``, ``-DNDEBUG``, ``-I...``).
        extra_ldflags: more linker flags (``-lfoo``).
        build_directory: where builds are kept; default ``$CUSTOMOP_CPP_CACHE``, else
            ``~/.cache/customop/cpp``.
        verbose: print the compiler command and its output.
        dispatcher: where to register; default: ``customop.dispatcher``.

    Returns:
        The handle of `load_library`: ``remove()`` takes the library's registrations away.

    Raises:
        BuildError: no compiler, or the compiler failed (with the command and its errors).
        RegistrationError: as `load_library`.
    """
    path = build(
        name,
        sources,
        extra_cflags=extra_cflags,
        extra_ldflags=extra_ldflags,
        build_directory=build_directory,
        verbose=verbose,
    )
    return load_library(path, dispatcher=dispatcher)


def build(
    name: str,
    sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    extra_cflags: Iterable[str] = (),
    extra_ldflags: Iterable[str] = (),
    build_directory: str | os.PathLike[str] | None = None,
    verbose: bool = False,
) -> Path:
    """Compile (unless cached) and return the library's path; `load` without loading."""
    if not _NAME.match(name):
        raise BuildError(
            f"customop.cpp.load: name {name!r} is not an identifier. It becomes the library's "
            "file name. Use letters, digits and underscores."
        )
    files = _sources(sources)
    cflags, ldflags = build_flags()
    cflags += list(extra_cflags)
    ldflags += list(extra_ldflags)
    compiler = _compiler()
    key = _hash(files, compiler, cflags, ldflags)
    folder = _folder(build_directory)
    target = folder / f"{name}-{key}.so"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{target.name}.{os.getpid()}.tmp"
    command = [compiler, *cflags, *(str(f) for f in files), *ldflags, "-o", str(partial)]
    _run(command, verbose=verbose)
    os.replace(partial, target)  # atomic: a concurrent build or load sees all or nothing
    return target


def _sources(sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    items = [sources] if isinstance(sources, str | os.PathLike) else list(sources)
    if not items:
        raise BuildError(
            "customop.cpp.load: no sources. A library is built from C++ files. Pass their paths."
        )
    files = [Path(item).expanduser().resolve() for item in items]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise BuildError(
            f"customop.cpp.load: source {missing[0]!r} is not a file. The compiler reads each "
            "source. Pass existing .cpp files."
        )
    return files


@functools.cache
def _compiler() -> str:
    candidates = [os.environ.get("CXX", ""), "c++", "g++", "clang++"]
    for candidate in candidates:
        found = shutil.which(candidate) if candidate else None
        if found:
            return found
    raise BuildError(
        "customop.cpp.load: no C++ compiler found (looked for $CXX, c++, g++, clang++). "
        "Building a library compiles its sources. Install one (apt install g++) or set CXX; "
        "or install a prebuilt wheel of the kernels."
    )


@functools.cache
def _compiler_version(compiler: str) -> str:
    done = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False)
    return done.stdout


def _hash(files: list[Path], compiler: str, cflags: list[str], ldflags: list[str]) -> str:
    digest = hashlib.sha256()
    for part in (compiler, _compiler_version(compiler), *cflags, "|", *ldflags, _tvm_version()):
        digest.update(part.encode() + b"\0")
    headers = sorted(Path(include_path()).rglob("*.h"))
    for file in [*files, *headers]:
        digest.update(str(file).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _tvm_version() -> str:
    try:
        return version("apache-tvm-ffi")
    except PackageNotFoundError:
        return ""


def _folder(build_directory: str | os.PathLike[str] | None) -> Path:
    if build_directory is not None:
        return Path(build_directory).expanduser()
    configured = os.environ.get("CUSTOMOP_CPP_CACHE")
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "customop" / "cpp"


def _run(command: list[str], *, verbose: bool) -> None:
    shown = shlex.join(command)
    if verbose:
        print(shown)  # verbose=True asks for the command
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if verbose and (done.stdout or done.stderr):
        print(done.stdout + done.stderr)  # and for the compiler's output
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line] or lines
        trimmed = "\n".join(errors[:_SHOWN_LINES])
        more = len(errors) - _SHOWN_LINES
        tail = f"\n... {more} more lines (verbose=True shows all)" if more > 0 else ""
        raise BuildError(
            f"customop.cpp.load: the compiler failed (exit {done.returncode}). The library "
            f"was not built. Fix the errors below.\ncommand: {_trim(shown)}\n{trimmed}{tail}",
            command=shown,
        )


def _trim(command: str, limit: int = 400) -> str:
    return command if len(command) <= limit else command[: limit - 3] + "..."
