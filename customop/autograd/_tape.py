"""The tape: which values a transform tracks, and the op calls that made them.

NOTE: values are tracked by identity: a leaf or an op's output is entered by
its ``id``, and a tape keeps each value it tracks alive, so an ``id`` is never
reused while the tape lives. The values are thin `Tracked` wrappers around
each backend's own arrays (fakes in a trace are tracked as they are), so
plain array code on them cannot make an untracked value unnoticed (see
`_tracked`).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, final

from customop.autograd._ctx import AutogradContext
from customop.dispatch import OperatorHandle
from customop.exceptions import AutogradError
from customop.schema import FunctionSchema
from customop.tensor import to_dtype

if TYPE_CHECKING:
    from customop.autograd._formula import AutogradFormula

__all__ = ["ACTIVE", "Nested", "Node", "Tape", "Var", "differentiable", "tensor_positions"]

#: The tapes recording now, outermost first (nested transforms stack).
ACTIVE: Final[ContextVar[tuple[Tape, ...]]] = ContextVar("customop.autograd.tapes", default=())


@final
class Var:
    """A tracked value: output ``index`` of ``node``, or leaf ``index`` when node is None."""

    __slots__ = ("index", "node")

    def __init__(self, node: Node | None, index: int) -> None:
        self.node = node
        self.index = index


#: An input's tracking: a Var, None (untracked), or a list of those (``Tensor[]``).
InputVar = Var | list[Var | None] | None


@final
class Node:
    """One recorded op call: what backward needs to send gradients to its inputs."""

    __slots__ = ("ctx", "formula", "in_vars", "inputs", "op", "out_vars", "outputs")

    def __init__(
        self,
        op: OperatorHandle,
        formula: AutogradFormula | None,
        inputs: tuple[Any, ...],
        in_vars: dict[int, InputVar],
        ctx: AutogradContext | None,
    ) -> None:
        self.op = op
        self.formula = formula
        self.inputs = inputs
        self.in_vars = in_vars
        self.ctx = ctx
        self.outputs: tuple[Any, ...] = ()
        self.out_vars: tuple[Var | None, ...] = ()

    @property
    def name(self) -> str:
        return str(self.op.name)


# id(dtype object) -> (the object, differentiable?). By identity: dtype objects are
# few and long-lived (numpy's and torch's are singletons), and hashing a numpy dtype
# costs several times a dict lookup by int. The object is kept so its id stays unique.
_FLOAT: dict[int, tuple[Any, bool]] = {}


def differentiable(value: Any) -> bool:
    """Whether ``value`` is an array with a floating or complex dtype."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return False
    known = _FLOAT.get(id(dtype))
    if known is not None and known[0] is dtype:
        return known[1] and not isinstance(value, type)
    if isinstance(value, type) or not hasattr(value, "shape"):
        return False  # np.float32 itself has shape and dtype descriptors
    try:
        found = to_dtype(dtype)
    except (TypeError, ValueError):
        floating = False
    else:
        floating = found.is_floating_point or found.is_complex
    if len(_FLOAT) < _FLOAT_CAP:
        _FLOAT[id(dtype)] = (dtype, floating)
    return floating


_FLOAT_CAP: Final = 1024


def tensor_positions(schema: FunctionSchema) -> tuple[tuple[int, str, bool], ...]:
    """``(index, name, is_list)`` of the schema's tensor arguments."""
    arguments = schema.arguments
    return tuple(
        (index, arguments[index].name, kind in ("list", "optional_list"))
        for index, kind in schema.tensor_argument_positions
    )


def bind_inputs(
    schema: FunctionSchema, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """The op's arguments in schema order, defaults filled in (what setup_context gets)."""
    if not kwargs and len(args) == len(schema.arguments):
        return args
    values = list(args)
    for arg in schema.arguments[len(args) :]:
        if arg.name in kwargs:
            values.append(kwargs[arg.name])
        else:
            values.append(None if arg.default is None else arg.default.value)
    return tuple(values)


@final
class Tape:
    """One transform's record: tracked values (by id), seen values, and the nodes in order."""

    __slots__ = ("api", "keep", "nodes", "seen", "vars")

    def __init__(self, api: str) -> None:
        self.api = api
        self.vars: dict[int, Var] = {}
        self.seen: set[int] = set()
        self.keep: list[Any] = []
        self.nodes: list[Node] = []

    def leaf(self, value: Any, index: int) -> Var:
        """Track a differentiated argument (the value ``fn`` gets)."""
        var = self.vars[id(value)] = Var(None, index)
        self.keep.append(value)
        return var

    def see(self, value: Any) -> None:
        """Remember an untracked op result (an output that depends on no argument)."""
        for item in value if isinstance(value, tuple | list) else (value,):
            self.seen.add(id(item))
            self.keep.append(item)

    def tracked(
        self,
        positions: tuple[tuple[int, str, bool], ...],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> dict[int, InputVar] | None:
        """The tracked tensor inputs of a call, by argument index; None when there are none."""
        found: dict[int, InputVar] = {}
        any_tracked = False
        vars_get = self.vars.get
        for index, name, is_list in positions:
            value = args[index] if index < len(args) else kwargs.get(name)
            if is_list:
                if value is None:
                    continue
                items = [vars_get(id(item)) if item is not None else None for item in value]
                if any(item is not None for item in items):
                    found[index] = items
                    any_tracked = True
            else:
                var = vars_get(id(value))
                if var is not None:
                    found[index] = var
                    any_tracked = True
        return found if any_tracked else None

    def record(
        self,
        op: OperatorHandle,
        formula: AutogradFormula | None,
        in_vars: dict[int, InputVar],
        raw_inputs: tuple[Any, ...],
        *,
        result: Any,
        raw_result: Any,
        nested: Nested | None = None,
    ) -> None:
        """Add a node for a call with tracked inputs, and track its float outputs.

        ``result`` is what ``fn`` gets (wrappers), ``raw_*`` what the kernel saw
        and made. ``setup_context`` sees the values as the tapes outer to this one
        see them (they are active when this tape's backward runs): plain arrays
        for the outermost tape, so a first-order backward computes on plain
        arrays; for a nested one (``nested``) the wrappers, with those tapes recording.
        """
        ctx = None
        if formula is not None:
            count = len(raw_inputs)
            # in_vars holds exactly the inputs with a tracked tensor (see `tracked`).
            ctx = AutogradContext(tuple([i in in_vars for i in range(count)]))
            if formula.setup_context is not None:
                _setup(formula, op, ctx, raw_inputs, raw_result, nested=nested)
        node = Node(op, formula, raw_inputs, in_vars, ctx)
        if type(raw_result) is tuple or type(raw_result) is list:
            outputs, raw_outputs = tuple(result), tuple(raw_result)
        else:
            outputs, raw_outputs = (result,), (raw_result,)
        out_vars: list[Var | None] = []
        for index, raw in enumerate(raw_outputs):
            # A wrapped output is a float array; fakes are tracked as they are.
            if outputs[index] is raw and not differentiable(raw):
                out_vars.append(None)
                continue
            for item in raw_inputs:
                if item is raw:
                    raise AutogradError(
                        f"{node.name}: output {index} is one of the op's input objects. "
                        "Gradients are tracked per array object, so an op that returns its "
                        "input would merge two values. Return a new array (a copy) from the "
                        "kernel."
                    )
            # The node keeps its outputs (and so their ids) alive.
            var = self.vars[id(outputs[index])] = Var(node, index)
            out_vars.append(var)
        node.outputs = outputs
        node.out_vars = tuple(out_vars)
        self.nodes.append(node)


@final
class Nested:
    """A call as a nested tape's ``setup_context`` sees it: wrappers, outer tapes recording."""

    __slots__ = ("inputs", "outer", "result")

    def __init__(self, inputs: tuple[Any, ...], result: Any, outer: tuple[Tape, ...]) -> None:
        self.inputs = inputs
        self.result = result
        self.outer = outer


def _setup(
    formula: AutogradFormula,
    op: OperatorHandle,
    ctx: AutogradContext,
    raw_inputs: tuple[Any, ...],
    raw_result: Any,
    *,
    nested: Nested | None,
) -> None:
    """Run setup_context on the call as the outer tapes see it (see `Tape.record`)."""
    if nested is None:
        _call_setup(formula, op, ctx, raw_inputs, raw_result)
        return
    token = ACTIVE.set(nested.outer)
    try:
        _call_setup(formula, op, ctx, nested.inputs, nested.result)
    finally:
        ACTIVE.reset(token)


def _call_setup(
    formula: AutogradFormula,
    op: OperatorHandle,
    ctx: AutogradContext,
    inputs: tuple[Any, ...],
    result: Any,
) -> None:
    """setup_context in its form: customop's (every input) or torch's (keyword-only apart)."""
    setup = formula.setup_context
    assert setup is not None
    if not formula.torch_form:
        setup(ctx, inputs, result)
        return
    arguments = op.schema.arguments
    positional = tuple(v for a, v in zip(arguments, inputs, strict=True) if not a.kwarg_only)
    keyword = {a.name: v for a, v in zip(arguments, inputs, strict=True) if a.kwarg_only}
    setup(ctx, positional, keyword, result)
