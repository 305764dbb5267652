"""A torch user's program: the op, its kernel and its fake are annotated with ``torch.Tensor``.

The kernel's body is checked by torch's own stubs (``.sin()``, ``.device``).
Run and type-checked by tests/typing/test_programs.py where torch is installed.
"""

# requires: torch

from __future__ import annotations

import torch

import customop
import customop.torch


@customop.custom_op("typing_torch::sin_scale", mutates_args=())
def sin_scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    return x.sin() * factor


@sin_scale.register_fake
def _(x: torch.Tensor, factor: float) -> torch.Tensor:
    return customop.empty_like(x)


@sin_scale.register_kernel("cpu")
def _(x: torch.Tensor, factor: float) -> torch.Tensor:
    return torch.sin(x).mul(factor).to(x.device)


def main() -> None:
    x = torch.arange(3.0)
    y: torch.Tensor = sin_scale(x, 2.0)
    print(y.shape, y.dtype)
    with customop.FakeTensorMode() as mode:
        print(sin_scale(mode.from_real(x), 2.0))
    with customop.torch.register(sin_scale):
        print(torch.ops.typing_torch.sin_scale(x, 2.0).shape)


if __name__ == "__main__":
    main()
