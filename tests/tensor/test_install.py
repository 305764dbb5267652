"""install_backends, the global dispatcher's defaults, and numpy staying lazy."""

from __future__ import annotations

import ast
from pathlib import Path

import customop
from customop.dispatch import Dispatcher, DispatchKey
from customop.tensor import FAKE_KEYS, FakeTensor, adapter_for, install_backends
from customop.tensor._install import DEFAULT_BACKENDS
from customop.tensor._lazy import TORCH_NAME

TENSOR = Path(customop.__file__).parent / "tensor"


def test_install_and_remove() -> None:
    fresh = Dispatcher()
    fresh.register_def("t::f(Tensor x) -> str")
    fresh.register_impl("t::f", DispatchKey.Fake, lambda x: "fake")
    op = fresh.find_schema_or_throw("t::f")
    handle = install_backends(fresh)
    assert op(FakeTensor((1,))) == "fake"
    assert adapter_for(FakeTensor, dispatcher=fresh) is not None
    assert handle.description == "tensor backends"
    handle.remove()
    handle.remove()  # idempotent
    assert adapter_for(FakeTensor, dispatcher=fresh) is None
    types = {info.type for info in fresh.snapshot().array_types}
    assert types == {"numpy.ndarray"}


def test_the_global_dispatcher_has_them() -> None:
    assert DEFAULT_BACKENDS.active
    infos = {info.type: info for info in customop.dispatcher.snapshot().array_types}
    fake = infos["customop.tensor._fake.FakeTensor"]
    assert set(fake.keys or ()) == {key.name for key in FAKE_KEYS}
    assert fake.source == "<customop default>"
    assert TORCH_NAME in infos


def test_tensor_modules_do_not_import_numpy_at_module_level() -> None:
    # `import customop` must not pay for numpy (DESIGN §8): numpy is imported by
    # whoever makes arrays; the tensor layer imports it inside functions.
    for path in sorted(TENSOR.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] == "numpy" for n in names), f"{path.name}:{node.lineno}"
