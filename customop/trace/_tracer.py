"""``trace(fn, *example_args)``: run ``fn`` on fakes and record every op call in a `Graph`.

Tracing is built on the dispatcher's own mechanism (DESIGN §3): while a trace
runs, the `Tracer` key is included in every call, and a boxed fallback on
that key (registered once per dispatcher) records the call, then redispatches
below `Tracer` so the op's fake impl computes the result's metadata. Values
are matched to graph nodes by identity: each fake an op returns is entered in
the trace's table.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Final

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet, OperatorHandle, include_keys
from customop.dispatch import dispatcher as default_dispatcher
from customop.fake import FakeTensorMode
from customop.tensor import ASSUMPTION_SINK, COMPUTING_AN_OP, FakeTensor, SymInt, assumptions_about
from customop.trace._graph import Graph
from customop.trace._meta import TensorMeta, is_scalar, meta_of
from customop.trace._node import Node, NodeRef
from customop.trace._values import CONSTANT_TYPES, ConstantKind

__all__ = ["trace"]

CONSTANT_TYPES[SymInt] = ConstantKind.SYM


class _Trace:
    """One running trace: its graph and which value is which node."""

    __slots__ = ("graph", "keep", "nodes")

    def __init__(self) -> None:
        self.graph = Graph()
        self.nodes: dict[int, Node | NodeRef] = {}
        self.keep: list[Any] = []

    def swap(self, value: Any) -> Any:
        """``value`` with every traced fake replaced by its node."""
        kind = type(value)
        if kind is tuple:  # the common case: an op's positional arguments
            return tuple([self.swap(item) for item in value])
        if kind in _PLAIN:
            return value
        if isinstance(value, FakeTensor):
            found = self.nodes.get(id(value))
            if found is None:
                raise RuntimeError(
                    f"trace: an op got a FakeTensor {value!r} that no traced op made and no "
                    "input is. A graph can only refer to its inputs and recorded results. "
                    "Pass the array as an argument of the traced function."
                )
            return found
        if isinstance(value, tuple | list):
            return type(value)(self.swap(item) for item in value)
        if isinstance(value, dict):
            return {key: self.swap(item) for key, item in value.items()}
        return value

    def enter(self, value: Any, node: Node | NodeRef) -> None:
        if isinstance(value, FakeTensor):
            self.nodes[id(value)] = node
            self.keep.append(value)  # ids stay unique while the trace holds its values


_PLAIN: Final = frozenset({int, float, bool, str, type(None)})
_ACTIVE: Final[ContextVar[_Trace | None]] = ContextVar("customop.trace", default=None)
_BELOW_TRACER: Final = DispatchKeySet.full().below(DispatchKey.Tracer)
_below: dict[DispatchKeySet, DispatchKeySet] = {}  # key sets are few and immutable
_installed: weakref.WeakKeyDictionary[Dispatcher, Any] = weakref.WeakKeyDictionary()
_install_lock: Final = threading.Lock()


def _record(op: OperatorHandle, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any) -> Any:
    """The Tracer key's fallback: compute below Tracer, then record the call."""
    below = _below.get(keyset)
    if below is None:
        below = _below[keyset] = keyset & _BELOW_TRACER
    token = COMPUTING_AN_OP.set(True)  # fake arithmetic in its kernel or fake: metadata
    try:
        result = op.redispatch(below, *args, **kwargs)
    finally:
        COMPUTING_AN_OP.reset(token)
    active = _ACTIVE.get()
    if active is None:
        return result
    _check_fake(op, result)
    node = active.graph.call(op, active.swap(args), active.swap(kwargs), meta_of(result))
    if isinstance(result, tuple | list):
        for index, item in enumerate(result):
            active.enter(item, node[index])
    else:
        active.enter(result, node)
    return result


def _install(dispatcher: Dispatcher) -> None:
    if dispatcher in _installed:
        return
    with _install_lock:  # two first traces at once: one registers, the other sees it
        if dispatcher not in _installed:
            _installed[dispatcher] = dispatcher.register_fallback(
                DispatchKey.Tracer, _record, debug="customop.trace"
            )


def _check_fake(op: OperatorHandle, result: Any) -> None:
    """Refuse a real array where the op's fake impl must have made a fake."""
    items = result if isinstance(result, tuple | list) else (result,)
    for index, item in enumerate(items):
        if isinstance(item, FakeTensor | type) or is_scalar(item):
            continue
        if hasattr(item, "shape") and hasattr(item, "dtype"):
            kind = type(item)
            raise TypeError(
                f"trace: {str(op.name)!r} computed a real array under the trace: output "
                f"{index} is {kind.__module__}.{kind.__qualname__}, not a FakeTensor. A trace "
                "runs ops on fakes (shape, dtype and device, no data), and a real array would "
                "be recorded as if it were one. Make the op's fake impl return fakes, e.g. "
                "customop.empty_like(x) or x.new_empty(shape)."
            )


def _input_names(fn: Callable[..., Any], count: int) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(count)]


def trace(
    fn: Callable[..., Any],
    *example_args: Any,
    dispatcher: Dispatcher | None = None,
    **example_kwargs: Any,
) -> Graph:
    """Record the ops ``fn`` calls on ``example_args`` (real arrays or fakes) into a `Graph`.

    Tensor arguments become placeholders (real ones are turned into fakes
    first); other arguments are constants baked into the graph. ``fn`` may
    return a tensor, or a tuple, list or dict of them.

    Args:
        fn: the function to trace.
        *example_args: example inputs (arrays, fakes, or other values).
        dispatcher: where the ops are dispatched; default: ``customop.dispatcher``.
        **example_kwargs: example keyword inputs.

    Returns:
        The recorded graph.

    Raises:
        MissingKernelError: an op has no fake impl.

    Examples:
        >>> import numpy as np
        >>> import customop
        >>> d = customop.Dispatcher()
        >>> _ = customop.tensor.install_backends(d)  # FakeTensor as an array type of d
        >>> @customop.custom_op("doctrace::relu", mutates_args=(), dispatcher=d)
        ... def relu(x: np.ndarray) -> np.ndarray:
        ...     return np.maximum(x, 0)
        >>> _ = relu.register_fake(lambda x: customop.empty_like(x))
        >>> graph = customop.trace(lambda x: relu(relu(x)), np.zeros((2, 3)), dispatcher=d)
        >>> print(graph)
        def forward(x: f64[2, 3]):
            relu = ops.doctrace.relu.default(x)       # f64[2, 3]
            relu_1 = ops.doctrace.relu.default(relu)  # f64[2, 3]
            return relu_1
    """
    target = default_dispatcher if dispatcher is None else dispatcher
    _install(target)
    active = _Trace()
    mode = FakeTensorMode()
    names = _input_names(fn, len(example_args))
    args = []
    for name, value in zip(names, example_args, strict=True):
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            fake = mode.from_real(value)
            active.enter(fake, active.graph.placeholder(name, TensorMeta.from_value(fake)))
            args.append(fake)
        else:
            args.append(value)
    token = _ACTIVE.set(active)
    assumed: list[str] = []
    sink = ASSUMPTION_SINK.set(assumed)  # what customop.check assumes while recording
    try:
        with mode, include_keys(DispatchKey.Tracer):
            result = fn(*args, **example_kwargs)
    finally:
        ASSUMPTION_SINK.reset(sink)
        _ACTIVE.reset(token)
    active.graph.output(active.swap(result))
    # Also what was known before: a check those facts decided recorded nothing new.
    sizes = [size for arg in args if isinstance(arg, FakeTensor) for size in arg.shape]
    for condition in (*assumed, *assumptions_about(sizes), *mode.shape_env.assumptions):
        active.graph.assume(condition)

    return active.graph
