"""customop.cpp.load / build: the cache, compiler errors, a missing compiler."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from customop import Dispatcher
from customop.cpp import _build, include_path, load
from customop.exceptions import BuildError

HERE = Path(__file__).parent


def test_include_path_holds_the_header() -> None:
    assert (Path(include_path()) / "customop" / "library.h").is_file()


def test_an_unchanged_build_is_loaded_from_the_cache(build_dir: Path, kernels_so: Path) -> None:
    stamp = kernels_so.stat().st_mtime_ns
    again = _build.build("cpptest", [HERE / "kernels.cpp"], build_directory=build_dir)
    assert again == kernels_so and again.stat().st_mtime_ns == stamp
    d = Dispatcher()
    with load("cpptest", HERE / "kernels.cpp", build_directory=build_dir, dispatcher=d):
        assert d.find_op("cpptest::add") is not None


def test_flags_are_part_of_the_cache_key(tmp_path: Path) -> None:
    source = tmp_path / "tiny.cpp"
    source.write_text("#include <customop/library.h>\nCUSTOMOP_LIBRARY(tiny, m) {}\n")
    plain = _build.build("tiny", source, build_directory=tmp_path)
    flagged = _build.build(
        "tiny", source, build_directory=tmp_path, extra_cflags=["-DCUSTOMOP_TEST_FLAG=1"]
    )
    assert plain != flagged and plain.is_file() and flagged.is_file()


def test_a_compiler_error_shows_the_command_and_the_error(tmp_path: Path) -> None:
    source = tmp_path / "broken.cpp"
    source.write_text("#include <customop/library.h>\nint f() { return undeclared; }\n")
    with pytest.raises(BuildError) as caught:
        _build.build("broken", source, build_directory=tmp_path)
    text = str(caught.value)
    assert text.startswith("customop.cpp.load: the compiler failed")
    assert "command: " in text and "broken.cpp" in text
    assert "undeclared" in text and "was not declared" in text
    assert caught.value.command.endswith(".tmp")


def test_no_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    _build._compiler.cache_clear()
    try:
        with pytest.raises(BuildError, match=r"no C\+\+ compiler found"):
            _build.build("x", HERE / "kernels.cpp", build_directory=tmp_path)
    finally:
        _build._compiler.cache_clear()


@pytest.mark.parametrize(
    ("name", "sources", "message"),
    [
        ("not-an-id", [HERE / "kernels.cpp"], "is not an identifier"),
        ("ok", [], "no sources"),
        ("ok", [HERE / "absent.cpp"], "is not a file"),
    ],
    ids=["name", "no-sources", "missing-source"],
)
def test_bad_arguments(name: str, sources: list[Path], message: str, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match=message):
        _build.build(name, sources, build_directory=tmp_path)
