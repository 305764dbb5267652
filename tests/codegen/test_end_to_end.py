"""End to end: generate examples/ops.yaml, import it, call the ops on numpy arrays, type-check.

The caller below is both run and checked by mypy: its calls must give the
right numbers, and mypy must flag exactly its one wrong call (in a function
that never runs).

NOTE: this needs the front-end (``customop.Library`` and ``customop.ops``,
DESIGN §4). Until it exists the test fails, on purpose, with a message saying so.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import customop
from customop.codegen import GenOptions, generate
from tests.codegen.conftest import EXAMPLE, ROOT
from tests.codegen.test_stubs import check_caller

MODULE = "mylib_ops_e2e"

CALLER = """
import numpy as np

from customop.tensor import Tensor
from mylib_ops_e2e import mylib

x = np.array([1.0, 2.0, 3.0])
y = np.array([10.0, 20.0, 30.0])
out = np.zeros(3)
mean, std = mylib.mean_std(x)
RESULTS: dict[str, Tensor] = {
    "add": mylib.add(x, y, alpha=2),
    "add.out": mylib.add.out(x, y, out=out),
    "packet out": mylib.add(y, x, out=np.zeros(3)),
    "scale": mylib.scale(x),
    "scale 3": mylib.scale.default(x, factor=3.0),
    "mse mean": mylib.mse_loss(x, y),
    "mse sum": mylib.mse_loss(x, y, reduction=2),
    "mean": mean,
    "std": std,
    "stack": mylib.stack([x, y], dim=1),
}


def never_called() -> None:
    mylib.scale(x, factor="2")  # E: arg-type
"""


def require_front_end() -> None:
    missing = [name for name in ("Library", "ops", "dispatcher") if not hasattr(customop, name)]
    if missing:
        pytest.fail(
            f"customop.{', customop.'.join(missing)} do not exist yet: this end-to-end test "
            "registers through the front-end (DESIGN §4) and runs once it lands."
        )


@pytest.fixture
def generated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    generate(EXAMPLE, tmp_path, GenOptions(module_name=MODULE))
    monkeypatch.syspath_prepend(str(ROOT))  # for examples.kernels
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("caller", None)
    module = sys.modules.pop(MODULE, None)
    if module is not None:
        module.unregister()


def test_generate_import_call(generated: Path) -> None:
    require_front_end()
    (generated / "caller.py").write_text(textwrap.dedent(CALLER))
    caller = importlib.import_module("caller")
    registered = sys.modules[MODULE]
    x, y = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
    expected = {
        "add": x + 2 * y,
        "add.out": x + y,
        "packet out": y + x,
        "scale": 2 * x,
        "scale 3": 3 * x,
        "mse mean": ((x - y) ** 2).mean(),
        "mse sum": ((x - y) ** 2).sum(),
        "mean": np.float64(2.0),
        "std": x.std(),
        "stack": np.stack([x, y], axis=1),
    }
    for name, value in expected.items():
        np.testing.assert_allclose(caller.RESULTS[name], value, err_msg=name)
    assert caller.RESULTS["add.out"] is caller.out  # the out= kernel wrote into it
    # The typed names are the runtime objects themselves: no wrapper, no extra frame.
    assert registered.mylib is customop.ops.mylib
    assert caller.mylib.add.default is customop.ops.mylib.add.default
    schema = customop.ops.mylib.mse_loss.default.schema
    assert schema.format("source").endswith("int reduction=Mean) -> Tensor")


def test_unregister_removes_the_ops(generated: Path) -> None:
    require_front_end()
    module = importlib.import_module(MODULE)
    assert module.mylib.scale(np.ones(2)).tolist() == [2.0, 2.0]
    module.unregister()
    assert customop.dispatcher.find_op("mylib::scale") is None
    importlib.reload(module)  # registers again
    assert customop.dispatcher.find_op("mylib::scale") is not None
    assert module.mylib.scale(np.ones(2)).tolist() == [2.0, 2.0]


def test_caller_type_checks(generated: Path) -> None:
    check_caller(generated, MODULE, CALLER)
