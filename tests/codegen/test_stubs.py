"""The typed stubs: the annotation table, and mypy --strict on generated stubs and their callers.

Caller files mark each line mypy must flag with ``# E: <error code>``; the
tests assert that mypy flags exactly those lines, with those codes.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from customop.codegen import GenOptions, generate
from customop.codegen._stubs import annotation
from customop.schema import parse_schema
from tests.codegen.conftest import EXAMPLE, NATIVE, TAGS, TRICKY, run_mypy

ANNOTATIONS = [
    # schema type, as a parameter, as a return value
    ("Tensor", "_Tensor", "_Tensor"),
    ("Tensor(a!)", "_Tensor", "_Tensor"),
    ("Tensor?", "_Tensor | None", "_Tensor | None"),
    ("Tensor[]", "_Sequence[_Tensor]", "list[_Tensor]"),
    ("Tensor?[]", "_Sequence[_Tensor | None]", "list[_Tensor | None]"),
    ("int", "_int", "_int"),
    ("SymInt", "_int", "_int"),
    ("SymInt[]", "_Sequence[_int]", "list[_int]"),
    ("int[2]", "_int | _Sequence[_int]", "list[_int]"),
    ("SymInt[1]?", "_int | _Sequence[_int] | None", "list[_int] | None"),
    ("bool[3]", "_Sequence[_bool]", "list[_bool]"),
    ("float", "_float", "_float"),
    ("Scalar", "_Scalar", "_Scalar"),
    ("Scalar[]", "_Sequence[_Scalar]", "list[_Scalar]"),
    ("ScalarType?", "_ScalarType | None", "_ScalarType | None"),
    ("Layout", "_int", "_int"),
    ("MemoryFormat?", "_int | None", "_int | None"),
    ("Device", "_Device", "_Device"),
    ("Generator?", "_Generator | None", "_Generator | None"),
    ("str", "_str", "_str"),
    ("Dimname[]", "_Sequence[_str]", "list[_str]"),
    ("Storage", "_Any", "_Any"),
    ("Dict(str, Tensor)", "dict[_str, _Tensor]", "dict[_str, _Tensor]"),
    ("Union(int, str)", "_int | _str", "_int | _str"),
    ("(int, Tensor)", "tuple[_int, _Tensor]", "tuple[_int, _Tensor]"),
    ("Future(int)", "_Any", "_Any"),
    ("t", "_Any", "_Any"),
]


@pytest.mark.parametrize(("schema_type", "param", "returned"), ANNOTATIONS, ids=lambda v: v)
def test_annotation(schema_type: str, param: str, returned: str) -> None:
    tp = parse_schema(f"f({schema_type} x) -> ()").arguments[0].type
    assert annotation(tp, param=True) == param
    assert annotation(tp, param=False) == returned


def check_caller(tmp_path: Path, module: str, caller: str) -> None:
    """mypy flags exactly the lines of ``caller`` marked ``# E: <code>``."""
    caller = textwrap.dedent(caller).lstrip("\n")
    (tmp_path / "caller.py").write_text(caller)
    expected = {
        (number, found.group(1))
        for number, line in enumerate(caller.splitlines(), start=1)
        if (found := re.search(r"# E: ([\w-]+)", line))
    }
    errors = run_mypy(tmp_path, f"{module}.pyi", "caller.py")
    flagged = set()
    for error in errors:
        found = re.match(r"caller\.py:(\d+): error: .*\[([\w-]+)\]$", error)
        assert found is not None, error  # the stub itself must be clean
        flagged.add((int(found.group(1)), found.group(2)))
    assert flagged == expected, "\n".join(errors)


def test_example_stub_checks_calls(tmp_path: Path) -> None:
    generate(EXAMPLE, tmp_path)
    check_caller(
        tmp_path,
        "ops",
        """
        import numpy as np

        from customop.tensor import Tensor
        from ops import mylib

        x = np.ones(3)
        total: Tensor = mylib.add(x, x, alpha=2)
        mylib.add.out(x, x, out=x)
        mylib.add(x, x, out=x)
        mean, std = mylib.mean_std(x, dim=0)
        loss = mylib.mse_loss(x, x, reduction=2)
        stacked = mylib.stack([x, x], dim=1)
        mylib.scale(x)

        mylib.scale(x, factor="2")  # E: arg-type
        mylib.scale.default(x, "2")  # E: arg-type
        mylib.add(x, x, 2)  # E: call-overload
        mylib.add.default(x, x, 2)  # E: call-arg
        mylib.add.out(x, x)  # E: call-arg
        mylib.mean_std(x, dim=[0])  # E: arg-type
        mylib.stack(x)  # E: arg-type
        mylib.add.Tensor(x, x)  # E: attr-defined
        mylib.sub(x, x)  # E: attr-defined
        text: str = mylib.scale(x)  # E: assignment
        mylib.add = mylib.add  # E: misc
        """,
    )


def test_tricky_stub_checks_calls(tmp_path: Path) -> None:
    generate(TRICKY, tmp_path, GenOptions(kernels="tests.codegen.kernels"))
    check_caller(
        tmp_path,
        "tricky",
        """
        import numpy as np

        from customop.tensor import Tensor
        from tricky import aten, tricky

        x = np.ones(3)
        values, indices = tricky.pick(x, 0, keepdim=True)
        only: Tensor = tricky.pick.int(x, index=1)
        tricky.pick.out(x, 0, values=x, indices=x)
        tricky.pick.from_(x, 1, to=None)
        tensors: list[Tensor] = tricky.gather([x, None], 2, [0, 1], dtype=np.float32)
        tricky.gather([x], stride=[1, 2], generator=np.random.default_rng(0), device="cpu")
        tricky.__and__(x, 1.5, mode="slow")
        tricky.__and__.Scalar(x, 2j, eps=1e-3)
        aten.lonely(x, {"a": x}, key="k")

        tricky.pick.int(x, 1)  # E: call-arg
        tricky.pick.from_(x, from_=1)  # E: call-arg
        tricky.gather([x], dtype=None, generator=1)  # E: arg-type
        tricky.gather([1])  # E: list-item
        tricky.__and__.Scalar(x, "one")  # E: arg-type
        aten.lonely(x, {"a": 1}, key="k")  # E: dict-item
        aten.lonely(x, {"a": x}, key=1.5)  # E: arg-type
        """,
    )


def test_native_functions_stub_passes_mypy_strict(tmp_path: Path) -> None:
    generate(NATIVE, tmp_path, GenOptions(tags_file=TAGS))
    check_caller(
        tmp_path,
        "native_functions",
        """
        import numpy as np

        from native_functions import aten

        x = np.ones(3)
        aten.add(x, x, alpha=2)
        aten.add.Tensor(x, x)
        aten.__and__.Scalar(x, True)
        aten.random_.from_(x, 0, None)
        aten.max.dim(x, 0)[1]
        aten.conv2d(x, x, None, stride=2, padding=[1, 1])

        aten.add.Tensor(x, "x")  # E: arg-type
        aten.random_.from_(x, 0, to=1, generator=0)  # E: arg-type
        """,
    )
