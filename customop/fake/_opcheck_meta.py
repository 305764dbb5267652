"""opcheck's ``test_faketensor``: the fake impl's outputs against the kernel's.

As ``torch.library.opcheck``'s (``CrossRefFakeMode``): the op runs on copies
of the real inputs and on their fakes (``FakeTensorMode.from_real``, strides
included); the outputs must agree in number, shape (a symbolic size matches
any), dtype, device, which of them are inputs, and, for torch tensors, in
their significant strides (dimensions of size > 1), as torch 2.13 checks.
Each failure says what differs in customop's words and in torch's
(``Shapes ... are not equal!``, ``Stride mismatch!``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from customop.exceptions import OpCheckError
from customop.fake._aliasing import as_numpy
from customop.fake._mode import FakeTensorMode
from customop.tensor import FakeTensor, SymInt, device_of, real_strides, significant_mismatch

__all__ = ["check_failed", "fake_check", "flat", "is_array", "torch_op_name"]


def torch_op_name(name: str) -> str:
    """``ns::name.overload`` as torch's OpOverload prints it: ``ns.name.overload``."""
    namespace, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    return f"{namespace}.{base}.{overload or 'default'}"


def check_failed(name: str, check: str, problem: str) -> OpCheckError:
    """The error of a failed check, naming the op both ways (``ns::f`` and ``ns.f.default``)."""
    return OpCheckError(f"opcheck({name} [{torch_op_name(name)}]): {check} failed: {problem}")


def is_array(value: Any) -> bool:
    """Whether ``value`` is an array (not a type such as np.float16, nor a numpy scalar)."""
    import numbers  # noqa: PLC0415 -- opcheck only

    return (
        hasattr(value, "shape")
        and hasattr(value, "dtype")
        and not isinstance(value, type | numbers.Number)
    )


def flat(value: Any) -> list[Any]:
    """The leaves of nested tuples, lists and dicts."""
    if isinstance(value, tuple | list):
        return [item for part in value for item in flat(part)]
    if isinstance(value, dict):
        return [item for part in value.values() for item in flat(part)]
    return [value]


def _faked(mode: FakeTensorMode, value: Any) -> Any:
    if isinstance(value, tuple | list):
        return type(value)(_faked(mode, item) for item in value)
    return mode.from_real(value) if is_array(value) else value


def fake_check(op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Run ``op`` on copies of the inputs and on fakes of them; raise on any difference."""
    real_args, real_kwargs = copy.deepcopy(tuple(args)), copy.deepcopy(kwargs)
    real = op(*real_args, **real_kwargs)
    mode = FakeTensorMode()
    fake_args = tuple(_faked(mode, a) for a in args)
    fake_kwargs = {key: _faked(mode, value) for key, value in kwargs.items()}
    try:
        with mode:
            fake = op(*fake_args, **fake_kwargs)
    except NotImplementedError as error:
        raise check_failed(name, "test_faketensor", str(error).splitlines()[0]) from None
    reals = [r for r in flat(real) if is_array(r)]
    fakes = [f for f in flat(fake) if is_array(f)]
    if len(reals) != len(fakes):
        raise check_failed(
            name, "test_faketensor",
            f"the fake impl returned {len(fakes)} tensor(s), the kernel {len(reals)} (mismatch "
            f"in number of returns {len(fakes)} != {len(reals)}). The fake impl must return "
            "what the kernel returns, with data left out.",
        )  # fmt: skip
    inputs = ({id(a) for a in flat((real_args, real_kwargs))},
              {id(f) for f in flat((fake_args, fake_kwargs))})  # fmt: skip
    for index, (r, f) in enumerate(zip(reals, fakes, strict=True)):
        problems = _differences(r, f)
        if (id(r) in inputs[0]) != (id(f) in inputs[1]):
            which = "is" if id(r) in inputs[0] else "is not"
            problems.append(
                f"the kernel's output {which} one of its inputs, the fake impl's not so "
                "(mismatch in outputs_are_inputs check)"
            )
        if problems:
            raise check_failed(
                name, "test_faketensor",
                f"output {index} of the fake impl has " + "; ".join(problems) + ". Fix the fake "
                "impl (registered with register_fake) to compute the kernel's metadata.",
            )  # fmt: skip


def _differences(real: Any, fake: Any) -> list[str]:
    shape = tuple(int(size) for size in real.shape)
    fake_shape = tuple(fake.shape)
    same_shape = len(shape) == len(fake_shape) and all(
        isinstance(fs, SymInt) or int(fs) == rs for fs, rs in zip(fake_shape, shape, strict=True)
    )
    mode = FakeTensorMode()
    meta = fake if isinstance(fake, FakeTensor) else mode.from_real(fake)
    problems = []
    if not same_shape:
        problems.append(
            f"shape {fake_shape} but the kernel's is {shape} (Shapes {shape} and {fake_shape} "
            "are not equal!)"
        )
    if str(meta.dtype) != str(mode.from_real(real).dtype):
        host = as_numpy(real)
        real_dtype = host.dtype if host is not None else real.dtype
        problems.append(
            f"dtype {meta.dtype} but the kernel's is {real_dtype} (Dtypes {real.dtype} and "
            f"{meta.dtype} are not equal!)"
        )
    if str(meta.device) != str(device_of(real)):
        problems.append(
            f"device {meta.device} but the kernel's is {device_of(real)} (Devices "
            f"{device_of(real)} and {meta.device} are not equal!)"
        )
    if not problems and callable(getattr(real, "stride", None)):  # a torch tensor: its strides
        problems.extend(_stride_problem(real, meta))
    return problems


def _stride_problem(real: Any, fake: FakeTensor) -> list[str]:
    strides = real_strides(real) or tuple(int(s) for s in real.stride())
    dim = significant_mismatch(tuple(real.shape), strides, fake.stride())
    if dim is None:
        return []
    return [
        f"strides {fake.stride()} but the kernel's are {strides} (Stride mismatch! Strides are "
        f"{strides} and {fake.stride()} (mismatched at {dim})!); make the fake with the "
        "kernel's layout, e.g. by permuting a contiguous one as the kernel does"
    ]
