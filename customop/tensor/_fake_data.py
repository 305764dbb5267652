"""What a `FakeTensor` refuses, with a message that says why: reading values, plain arithmetic.

A fake has a shape, a dtype and a device, no values. Without these methods,
``int(x[0])`` in a fake impl fails with Python's own "int() argument must be
... not 'FakeTensor'", ``bool(x)`` is always True (a silently wrong branch),
and ``np.add(fake, 1)`` in a traced function with numpy's
"``__array_ufunc__=None``". Each now names the op whose fake impl is running
(when one is) and says what to do instead: a symbolic size for data-dependent
output sizes, an op for arithmetic a trace should record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NoReturn

from customop.exceptions import DataDependentError

__all__ = ["OPERATOR_WORDS", "FakeTensorData", "refuse_compute"]


def _running_op() -> str | None:
    from customop.tensor._ctx import running_fake_impl  # noqa: PLC0415 -- _ctx imports fakes

    return running_fake_impl()


def _refuse_read(fake: object, what: str) -> NoReturn:
    op = _running_op()
    head = "FakeTensor:" if op is None else f"{op}: its fake impl read a value of a FakeTensor"
    shown = f"{what} of {fake!r}"
    raise DataDependentError(
        f"{head} {shown if op is None else f'({shown})'}. A fake has a shape, a dtype and a "
        "device but no values, so a fake impl cannot depend on them. For an output size that "
        "depends on the data, take a new symbolic size: "
        "customop.empty((customop.get_ctx().new_dynamic_size(),))."
    )


def refuse_compute(fake: object, what: str) -> NoReturn:
    op = _running_op()
    where = "" if op is None else f" (in the fake impl of {op})"
    raise TypeError(
        f"FakeTensor: {what} on a FakeTensor {fake!r}{where}. A fake has no data, so plain "
        "array code cannot compute with it: trace records op calls, and a fake impl computes "
        "output metadata. In a traced function, make the computation an op (a custom_op with "
        "a fake impl); in a fake impl, make the output with customop.empty_like or x.new_empty."
    )


class FakeTensorData:
    """The data-reading and computing protocols of a `FakeTensor`: each refuses, clearly."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> NoReturn:
        suffix = "" if method == "__call__" else f".{method}"
        refuse_compute(self, f"numpy.{ufunc.__name__}{suffix}")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> NoReturn:
        refuse_compute(self, f"numpy.{func.__name__}")

    def __int__(self) -> NoReturn:
        _refuse_read(self, "int()")

    def __float__(self) -> NoReturn:
        _refuse_read(self, "float()")

    def __complex__(self) -> NoReturn:
        _refuse_read(self, "complex()")

    def __index__(self) -> int:  # noqa: PLE0305 -- it raises: a fake has no value
        _refuse_read(self, "operator.index()")

    def __bool__(self) -> bool:  # noqa: PLE0304 -- it raises: a fake has no value
        _refuse_read(self, "bool()")

    def item(self) -> NoReturn:
        """A fake has no value: raises `DataDependentError`."""
        _refuse_read(self, ".item()")

    def tolist(self) -> NoReturn:
        """A fake has no values: raises `DataDependentError`."""
        _refuse_read(self, ".tolist()")


def _refusing(how: str) -> Callable[..., NoReturn]:
    def method(self: FakeTensorData, *other: Any) -> NoReturn:
        refuse_compute(self, how)

    return method


# The arithmetic operators, as data. Comparisons (==, <, ...) are left alone: ``==``
# is identity for fakes (they are hashable), and an ordering raises Python's TypeError.
_BINARY: Final = (
    ("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("floordiv", "//"),
    ("mod", "%"), ("pow", "**"), ("matmul", "@"), ("and", "&"), ("or", "|"), ("xor", "^"),
)  # fmt: skip
for _name, _symbol in _BINARY:
    for _form in (f"__{_name}__", f"__r{_name}__", f"__i{_name}__"):
        setattr(FakeTensorData, _form, _refusing(f"the {_symbol} operator"))
for _name, _how in (("neg", "the unary - operator"), ("pos", "the unary + operator"),
                    ("abs", "abs()"), ("invert", "the ~ operator")):  # fmt: skip
    setattr(FakeTensorData, f"__{_name}__", _refusing(_how))

#: How messages name an operator, by the name FakeTensor's metadata arithmetic uses.
OPERATOR_WORDS: Final = {
    **{name: f"the {symbol} operator" for name, symbol in _BINARY},
    "neg": "the unary - operator",
    "pos": "the unary + operator",
    "abs": "abs()",
    "invert": "the ~ operator",
}
