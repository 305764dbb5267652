"""The tape: which values a transform tracks, and the op calls that made them.

NOTE: values are tracked by identity. ``grad`` hands ``fn`` the caller's own
arrays (no wrapper type), so every backend works unchanged and a traced or
fake run records the same way as an eager one; a tape keeps each value it
tracks alive, so an ``id`` is never reused while the tape lives. Plain array
arithmetic between ops makes new, untracked arrays: the transforms notice an
untracked output and say so.
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

__all__ = ["ACTIVE", "Node", "Tape", "Var", "differentiable", "tensor_positions"]

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


_POSITIONS: dict[int, tuple[FunctionSchema, tuple[tuple[int, str, bool], ...]]] = {}


def tensor_positions(schema: FunctionSchema) -> tuple[tuple[int, str, bool], ...]:
    """``(index, name, is_list)`` of the schema's tensor arguments (memoized per schema)."""
    found = _POSITIONS.get(id(schema))
    if found is None or found[0] is not schema:
        positions = tuple(
            (index, schema.arguments[index].name, kind in ("list", "optional_list"))
            for index, kind in schema.tensor_argument_positions
        )
        if len(_POSITIONS) >= _FLOAT_CAP:
            _POSITIONS.clear()  # schemas of ops long gone: start over rather than grow
        found = _POSITIONS[id(schema)] = (schema, positions)
    return found[1]


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

    __slots__ = ("keep", "nodes", "seen", "vars")

    def __init__(self) -> None:
        self.vars: dict[int, Var] = {}
        self.seen: set[int] = set()
        self.keep: list[Any] = []
        self.nodes: list[Node] = []

    def leaf(self, value: Any, index: int, api: str) -> Var | None:
        """Track a differentiated argument (None when it is not a float array)."""
        if not differentiable(value):
            return None
        if id(value) in self.vars:
            raise ValueError(
                f"{api}: differentiated argument {index} is the same array object as an "
                "earlier one. Arrays are tracked by identity, so their gradients would mix. "
                "Pass a copy for one of them."
            )
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
        inputs: tuple[Any, ...],
        in_vars: dict[int, InputVar],
        result: Any,
    ) -> None:
        """Add a node for a call with tracked inputs, and track its float outputs."""
        ctx = None
        count = len(inputs)
        if formula is not None:
            ctx = AutogradContext(tuple([_needs(in_vars.get(i)) for i in range(count)]))
            if formula.setup_context is not None:
                _setup(formula, op, ctx, inputs, result)
        node = Node(op, formula, inputs, in_vars, ctx)
        outputs = tuple(result) if isinstance(result, tuple | list) else (result,)
        out_vars: list[Var | None] = []
        for index, value in enumerate(outputs):
            if not differentiable(value):
                out_vars.append(None)
                continue
            for item in inputs:
                if item is value:
                    raise AutogradError(
                        f"{node.name}: output {index} is one of the op's input objects. "
                        "Gradients are tracked per array object, so an op that returns its "
                        "input would merge two values. Return a new array (a copy) from the "
                        "kernel."
                    )
            # The node keeps its outputs (and so their ids) alive.
            var = self.vars[id(value)] = Var(node, index)
            out_vars.append(var)
        node.outputs = outputs
        node.out_vars = tuple(out_vars)
        self.nodes.append(node)


def _setup(
    formula: AutogradFormula, op: OperatorHandle, ctx: Any, inputs: tuple[Any, ...], result: Any
) -> None:
    """Run setup_context in its form: customop's (every input) or torch's (keyword-only apart)."""
    setup = formula.setup_context
    assert setup is not None
    if not formula.torch_form:
        setup(ctx, inputs, result)
        return
    arguments = op.schema.arguments
    positional = tuple(v for a, v in zip(arguments, inputs, strict=True) if not a.kwarg_only)
    keyword = {a.name: v for a, v in zip(arguments, inputs, strict=True) if a.kwarg_only}
    setup(ctx, positional, keyword, result)


def _needs(var: InputVar) -> bool:
    if isinstance(var, list):
        return any(item is not None for item in var)
    return var is not None
