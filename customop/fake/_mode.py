"""`FakeTensorMode`: run ops for their metadata only (shape, dtype, device).

Inside the mode the `Fake` dispatch key is included in every call, so each op
runs its fake impl (else its Meta kernel, else its CompositeImplicitAutograd
decomposition; DESIGN §3), factories (`customop.empty_like`, ...) make
`FakeTensor`s, and ``get_ctx().new_dynamic_size()`` draws symbols from the
mode's `ShapeEnv`. Real inputs are converted with ``mode.from_real(x)``.
Outside any mode, ops on FakeTensors still run their fake impls: a fake
carries the Fake key itself.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, TypeVar, overload

from customop.dispatch import DispatchKey, LocalKeysGuard, include_keys
from customop.symbolic import IntLike
from customop.tensor import (
    CURRENT_FAKE_MODE,
    PLAIN_FAKE_FACTORIES,
    Device,
    FakeTensor,
    ShapeEnv,
    SymInt,
    Tensor,
    dense_like,
    device_of,
    dtype,
    real_strides,
    to_dtype,
)

__all__ = ["FakeTensorMode"]

_new_object = object.__new__

#: An array type `from_real` fakes: the fake is typed as the array it stands in for.
TensorT = TypeVar("TensorT", bound=Tensor)


class FakeTensorMode:
    """``with FakeTensorMode() as mode:`` ops compute metadata, not data."""

    def __init__(self, *, shape_env: ShapeEnv | None = None) -> None:
        self.shape_env = ShapeEnv() if shape_env is None else shape_env
        self._guards: list[tuple[LocalKeysGuard, Any]] = []

    @overload
    def from_real(self, x: FakeTensor, *, dynamic: tuple[int, ...] = ()) -> FakeTensor: ...

    @overload
    def from_real(self, x: TensorT, *, dynamic: tuple[int, ...] = ()) -> TensorT: ...

    def from_real(self, x: Any, *, dynamic: tuple[int, ...] = ()) -> Any:
        """A fake with ``x``'s shape, dtype, device and strides (``dynamic``: dims made symbolic).

        Typed as returning ``x``'s own type: the fake stands in for ``x``, so
        ``op(mode.from_real(x))`` type-checks for an op annotated with ``x``'s
        array type (as torch's FakeTensor is a ``torch.Tensor``).

        Args:
            x: a real array of a registered backend (or a fake, returned as is).
            dynamic: dimensions to replace with fresh symbolic sizes.

        Returns:
            The fake.
        """
        if isinstance(x, FakeTensor):
            return x
        shape = getattr(x, "shape", None)
        if shape is None or not hasattr(x, "dtype"):
            raise TypeError(
                f"FakeTensorMode.from_real: expected an array, got {type(x).__qualname__} "
                f"({x!r:.60}). A fake copies an array's shape, dtype and device. Pass an array "
                "of a registered backend (numpy.ndarray, torch.Tensor, ...)."
            )
        sizes: list[IntLike] = [int(size) for size in shape]
        for dim in dynamic:
            sizes[dim] = self.shape_env.new_symint(0, None)
        fake = FakeTensor(tuple(sizes), to_dtype(x.dtype), device_of(x))
        strides = real_strides(x)  # None for a contiguous array: the fake's default
        if strides is not None and dynamic:
            # Symbolic sizes: the real layout's dimension order, made dense in them.
            strides = dense_like(sizes, strides)
        if strides is not None:
            fake._strides = strides
        return fake

    def make_fake(self, shape: tuple[IntLike, ...], dtype: dtype, device: Device) -> FakeTensor:
        """`FakeTensorFactory`: what ``customop.empty`` and friends return in the mode.

        The factory helpers pass metadata they have checked already, so this
        builds the fake without validating it again (a fake impl's hot path).

        Args:
            shape: the sizes (ints or `SymInt`).
            dtype: the element type.
            device: the device.

        Returns:
            A fake tensor owned by this mode.
        """
        # FakeTensor._new inlined: a frame less on every fake impl's empty_like.
        fake = _new_object(FakeTensor)
        fake._shape = shape
        fake._dtype = dtype
        fake._device = device
        return fake

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None) -> SymInt:
        """A new symbolic size for a data-dependent dimension.

        Args:
            min: the smallest value the size can take.
            max: the largest value, or ``None`` for no upper bound.

        Returns:
            A fresh ``SymInt`` (``s0``, ``s1``, ...) owned by this mode's shape environment.
        """
        return self.shape_env.new_symint(min, max)

    def __enter__(self) -> FakeTensorMode:
        guard = include_keys(DispatchKey.Fake)
        token = CURRENT_FAKE_MODE.set(self)
        guard.__enter__()
        self._guards.append((guard, token))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        guard, token = self._guards.pop()
        guard.__exit__(kind, error, tb)
        CURRENT_FAKE_MODE.reset(token)

    def __repr__(self) -> str:
        return f"<FakeTensorMode: {len(self.shape_env.symbols)} size symbols>"


# make_fake above builds a plain fake: empty_like may skip calling it (exact type only).
PLAIN_FAKE_FACTORIES.add(FakeTensorMode)
