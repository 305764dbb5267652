"""Kernels as the dispatcher stores them: the callable, how to call it, and where it came from."""

from __future__ import annotations

import linecache
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn, TypeAlias, final

from customop.dispatch._keys import DispatchKey

__all__ = [
    "DEFAULT_SOURCE",
    "Kernel",
    "KernelRecord",
    "caller_source",
    "fallthrough",
    "kernel_name",
    "user_stacklevel",
]

#: Any callable. A plain kernel is called as ``kernel(*args, **kwargs)``; a boxed
#: kernel (and every fallback) as ``kernel(op, keyset, *args, **kwargs)``.
Kernel: TypeAlias = Callable[..., Any]

#: The source recorded for registrations the dispatcher makes itself.
DEFAULT_SOURCE: Final = "<customop default>"


@final
class _Fallthrough:
    """The `fallthrough` kernel's type: a marker the dispatcher never calls."""

    __slots__ = ()
    __name__ = "fallthrough"

    def __call__(self, /, *args: Any, **kwargs: Any) -> NoReturn:
        # Fallthrough keys are masked out of every call, so reaching this is a dispatcher bug.
        raise RuntimeError(
            "fallthrough: the fallthrough kernel ran. It marks keys to skip and is never "
            "called by the dispatcher. Call the operator instead of this kernel."
        )

    def __repr__(self) -> str:
        return "fallthrough"

    def __reduce__(self) -> str:
        return "fallthrough"


#: Register this as a kernel or fallback to make its key fall through to the next
#: key down. It removes the key from the operator's dispatch mask when registered,
#: so it costs nothing per call.
fallthrough: Final = _Fallthrough()


@final
@dataclass(slots=True, eq=False)
class KernelRecord:
    """One registered kernel or fallback. Compared by identity; ``alive`` turns off on removal."""

    fn: Kernel
    boxed: bool
    key: DispatchKey
    source: str
    debug: str = ""
    op: str = ""
    #: A wrapper backend's fallback (Dask arrays): it serves its key ahead of
    #: composite kernels, which would compute on the wrapper instead of its chunks.
    wrapper: bool = False
    alive: bool = True
    #: What a dispatch table slot holds for this kernel, made once (tables are
    #: rebuilt on every registration).
    slot: tuple[Kernel, bool] = field(init=False)

    def __post_init__(self) -> None:
        self.slot = (self.fn, self.boxed)

    @property
    def is_fallthrough(self) -> bool:
        return self.fn is fallthrough

    @property
    def name(self) -> str:
        return kernel_name(self.fn)

    @property
    def where(self) -> str:
        """``source`` plus ``debug`` when given: how dumps and errors point at it."""
        return f"{self.source} ({self.debug})" if self.debug else self.source

    @property
    def label(self) -> str:
        return f"{self.name} at {self.where}"


def kernel_name(fn: object) -> str:
    """A short, readable name for a kernel callable."""
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else type(fn).__name__


_PACKAGE_DIRS: Final = tuple(
    {
        os.path.dirname(os.path.dirname(__file__)) + os.sep,
        os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep,
    }
)


def caller_source() -> str:
    """``"file.py:42"`` of the nearest calling frame in user code.

    Front-ends (``Library``, ``@custom_op``) call the dispatcher from inside
    customop; skipping those frames points the source at the user's line.
    Launcher frames are skipped too (``python -m``'s runpy, a console script
    such as ``customop``, import machinery), so they never pose as the source.
    The demo's module counts as user code: its ops show its own lines.
    """
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        shown = _SHOWN.get(filename)
        if shown is None:
            shown = _SHOWN[filename] = _shown_name(filename)
        if shown:
            line = frame.f_lineno
            if sys.version_info < (3, 11):  # pragma: no cover - depends on the interpreter
                line = _decorator_line(filename, line)
            return f"{shown}:{line}"
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>"


def _decorator_line(filename: str, line: int) -> int:
    """The first decorator line above a ``def``/``class`` line, else ``line`` itself.

    Python 3.11+ reports a decorator call at the decorator's line; 3.10 at the
    ``def`` line below the stack. Reading the source back up to the stack's first
    ``@`` gives registrations the same source on every version.
    """
    text = linecache.getline(filename, line)
    indent = len(text) - len(text.lstrip())
    if not text.lstrip().startswith(("def ", "async def ", "class ")):
        return line
    found, above = line, line - 1
    while above > 0:
        prior = linecache.getline(filename, above)
        stripped = prior.lstrip()
        depth = len(prior) - len(stripped)
        if not stripped or depth < indent:
            break
        if depth == indent and stripped.startswith("@"):
            found = above
        elif depth == indent and not stripped.startswith((")", "]", "}")):
            break
        above -= 1
    return found


# co_filename -> its base name, or "" for a skipped file (customop's own, a
# launcher). Every registration asks, and the answer never changes for a file.
_SHOWN: dict[str, str] = {}

#: customop's own modules that register ops as examples, shown like user code.
_EXAMPLE_MODULES: Final = frozenset({os.path.join("cli", "_demo.py")})
#: Console-script launchers that pip writes for ``customop`` (POSIX, Windows).
_LAUNCHERS: Final = frozenset({"customop", "customop-script.py", "customop.exe"})


def _shown_name(filename: str) -> str:
    if filename.startswith(_PACKAGE_DIRS):
        inside = filename[len(next(d for d in _PACKAGE_DIRS if filename.startswith(d))) :]
        return "customop/" + inside.replace(os.sep, "/") if inside in _EXAMPLE_MODULES else ""
    if _is_launcher(filename):
        return ""
    return os.path.basename(filename)


def _is_launcher(filename: str) -> bool:
    """``<frozen runpy>`` and other frozen stdlib code, runpy.py, and console scripts."""
    if filename.startswith("<frozen ") or filename in _RUNPY_FILES:
        return True
    return os.path.basename(filename) in _LAUNCHERS


#: The stdlib runpy module's file (Python 3.10 runs it from source, not frozen).
_RUNPY_FILES: Final = frozenset({os.path.join(os.path.dirname(os.__file__), "runpy.py")})


def user_stacklevel() -> int:
    """The ``stacklevel`` for `warnings.warn` that points at the nearest user frame."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIRS):
        frame, level = frame.f_back, level + 1
    return level
