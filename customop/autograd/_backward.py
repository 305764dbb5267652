"""The backward pass: cotangents from the outputs back to the leaves, node by node.

First the nodes a cotangent reaches are found, and one without a formula
stops everything before any backward runs. Then each reached node's formula
runs, newest first, with zeros for outputs no gradient reached (torch's
materialized grads); its result is checked (count, shape) and accumulated
per input with the ``autograd::add`` op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from customop.autograd._builtins import Builtins
from customop.autograd._tape import ACTIVE, Node, Tape, Var, tensor_positions
from customop.autograd._tracked import made_by
from customop.exceptions import AutogradError
from customop.tensor import FakeTensor, dtype

__all__ = ["backward"]


def _reached(roots: Sequence[Var]) -> set[Node]:
    reached: set[Node] = set()
    stack = [var.node for var in roots if var.node is not None]
    while stack:
        node = stack.pop()
        if node in reached:
            continue
        reached.add(node)
        for tracked in node.in_vars.values():
            items: list[Var | None] = tracked if isinstance(tracked, list) else [tracked]
            for item in items:
                if item is not None and item.node is not None and item.node not in reached:
                    stack.append(item.node)
    return reached


def _check_formulas(tape: Tape, reached: set[Node], api: str) -> None:
    for node in tape.nodes:
        if node in reached and node.formula is None:
            short = node.name.split("::", 1)[-1]
            raise AutogradError(
                f"{api}: a gradient flows through {node.name!r}, which has no autograd formula. "
                "customop differentiates op by op, and this op's kernel says nothing about "
                f"its gradient. Register one with {short}.register_autograd(backward, "
                f"setup_context=...) or customop.register_autograd({node.name!r}, ...), or "
                "make the op CompositeImplicitAutograd over ops that have formulas."
            )


def backward(
    tape: Tape, builtins: Builtins, roots: Sequence[tuple[Var, Any]], api: str
) -> dict[Var, Any]:
    """Run the formulas from ``roots`` (``(var, cotangent)``); the gradients of the leaves."""
    reached = _reached([var for var, _ in roots])
    _check_formulas(tape, reached, api)
    grads: dict[Var, Any] = {}
    for var, cotangent in roots:
        _accumulate(grads, var, cotangent, builtins)
    for node in reversed(tape.nodes):
        if node not in reached:
            continue
        out_grads = [None if out is None else grads.pop(out, None) for out in node.out_vars]
        if all(grad is None for grad in out_grads):
            continue  # nothing reached this node: its contribution is zero
        for index, out in enumerate(node.out_vars):
            if out is not None and out_grads[index] is None:
                out_grads[index] = builtins.zeros_like(node.outputs[index])
        results = _run_formula(node, out_grads)
        for index in node.in_vars:
            _send(grads, node, index, results[index], builtins)
    return {var: grad for var, grad in grads.items() if var.node is None}


def _run_formula(node: Node, out_grads: list[Any]) -> tuple[Any, ...]:
    formula = node.formula
    assert formula is not None  # checked for every reached node before any backward ran
    try:
        result = formula.backward(node.ctx, *out_grads)
    except Exception as error:
        if any(isinstance(grad, FakeTensor) for grad in out_grads):
            raise AutogradError(
                f"trace: the backward of {node.name!r} cannot be traced: it raised "
                f"{type(error).__name__}: {str(error)[:200]}. A traced backward runs on fake "
                "tensors, which plain array code (numpy, ...) cannot compute with. Write "
                f"{node.name}'s backward with customop ops."
            ) from error
        raise
    positions = tensor_positions(node.op.schema)
    one_list = len(node.inputs) == 1 and bool(positions) and positions[0][2]
    if isinstance(result, tuple) or (isinstance(result, list) and not one_list):
        results = tuple(result)
    else:  # one gradient for a one-input op (a list: the gradient of a Tensor[] input)
        results = (result,)
    if formula.torch_form:  # torch's form: gradients of the positional arguments only
        results += (None,) * (len(node.inputs) - len(results))
    expected = len(node.inputs)
    if len(results) != expected:
        names = ", ".join(arg.name for arg in node.op.schema.arguments)
        raise AutogradError(
            f"{node.name}: backward returned {len(results)} gradient(s), expected {expected}: "
            f"one per input ({names}). Gradients are matched to inputs by position. Return a "
            "tuple with one entry per input, None for inputs without a gradient."
        )
    tensors = {index for index, _, _ in positions}
    for index, grad in enumerate(results):
        if grad is not None and index not in tensors:
            name = node.op.schema.arguments[index].name
            raise AutogradError(
                f"{node.name}: backward returned a gradient for {name!r}, which is not a tensor "
                "input. Only tensors have gradients (torch refuses this too). Return None in "
                "its place."
            )
    tapes = ACTIVE.get()
    if tapes:  # an outer transform records this backward: it must be made of ops
        for index, grad in enumerate(results):
            for item in grad if isinstance(grad, list | tuple) else (grad,):
                _check_not_derived(node, index, item, tapes[-1].api)
    return results


def _check_not_derived(node: Node, index: int, grad: Any, api: str) -> None:
    made = made_by(grad)
    if made is None:
        return
    name = node.op.schema.arguments[index].name
    raise AutogradError(
        f"{api}: the backward of {node.name!r} returned a gradient for {name!r} made by "
        f"{made} from values {api} tracks, which {api} does not record. A backward in plain "
        "array code gives a right first derivative, but an outer transform would take it "
        f"for a constant. Write {node.name}'s backward with ops that have formulas."
    )


def _send(grads: dict[Var, Any], node: Node, index: int, grad: Any, builtins: Builtins) -> None:
    var = node.in_vars[index]
    if grad is None or var is None:
        return
    if type(var) is Var:
        _check_grad(node, index, grad, node.inputs[index])
        _accumulate(grads, var, grad, builtins)
        return
    name = node.op.schema.arguments[index].name
    if isinstance(var, list):
        if not isinstance(grad, list | tuple) or len(grad) != len(var):
            raise AutogradError(
                f"{node.name}: backward returned {type(grad).__name__} for list input {name!r} "
                f"of {len(var)} tensors. A Tensor[] input takes one gradient per tensor. Return "
                "a list of that length (None for entries without one)."
            )
        for position, (item_var, item) in enumerate(zip(var, grad, strict=True)):
            if item_var is not None and item is not None:
                _check_grad(node, (index, position), item, node.inputs[index][position])
                _accumulate(grads, item_var, item, builtins)


def _check_grad(node: Node, where: int | tuple[int, int], grad: Any, value: Any) -> None:
    """A gradient has its input's shape and dtype."""
    shape = getattr(grad, "shape", None)
    kind = getattr(grad, "dtype", None)
    expected = value.shape
    try:
        # The common case, decided without building tuples (dtypes are singletons).
        if shape == expected and kind is value.dtype:
            return
    except Exception:
        pass
    if shape is None or not _same_shape(tuple(shape), tuple(expected)):
        got = "no shape" if shape is None else f"shape {tuple(shape)}"
        raise AutogradError(
            f"{node.name}: backward returned a gradient with {got} for input "
            f"{_input_name(node, where)!r} of shape {tuple(expected)}. A gradient has its "
            "input's shape. Reduce or reshape it in the backward (for a broadcast input, sum "
            "over the broadcast dimensions)."
        )
    # Compared by name: a fake's dtype is customop's, an array's its backend's.
    got, want = _dtype_name(kind), _dtype_name(value.dtype)
    if got != want:
        raise AutogradError(
            f"{node.name}: backward returned a gradient of dtype {got} for input "
            f"{_input_name(node, where)!r} of dtype {want}. A gradient has "
            "its input's dtype (JAX refuses a mismatch too), or it would change the dtype of "
            "everything it is added to. Cast it in the backward, e.g. grad.astype(x.dtype)."
        )


def _input_name(node: Node, where: int | tuple[int, int]) -> str:
    index = where if isinstance(where, int) else where[0]
    name = node.op.schema.arguments[index].name
    return name if isinstance(where, int) else f"{name}[{where[1]}]"


def _dtype_name(kind: Any) -> str:
    try:
        return dtype.from_any(kind).name
    except (TypeError, ValueError):
        return str(kind)


def _same_shape(left: tuple[Any, ...], right: tuple[Any, ...]) -> bool:
    if len(left) != len(right):
        return False
    for a, b in zip(left, right, strict=True):
        if a is b:
            continue
        try:
            if not bool(a == b):
                return False
        except Exception:  # an undecidable symbolic size: the fake run cannot tell
            continue
    return True


def _accumulate(grads: dict[Var, Any], var: Var, grad: Any, builtins: Builtins) -> None:
    found = grads.get(var)
    grads[var] = grad if found is None else builtins.add(found, grad)
