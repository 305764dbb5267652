"""customop ops registered in torch (``customop.torch.register``) vs torch's own ops, in one run.

    python benchmarks/bench_torch.py

Every op's kernel returns its first argument, so the figures are per-call
overhead on plain CPU torch tensors. Rows: the kernel called directly, the
``def w(*a, **k): return kernel(*a, **k)`` wrapper (the floor), the customop
op through its object and inline through ``customop.ops``, the same op
through ``torch.ops`` (torch's dispatcher and our trampoline), a
``torch.library.custom_op`` and a ``torch.library.Library`` define+impl op;
then the same for a 14-argument op like pytorch#177109's; then calls whose
inputs need grad (forward, and forward + backward) against a torch
``custom_op`` with the same ``register_autograd`` formula.

Targets (issue #14 §3, §4): the fast path <= 2x the wrapper, >= 20x faster
than torch custom_op, >= 3x faster than a torch Library op; with grad
inputs, at most torch custom_op's cost.

NOTE: as in bench_dispatch.py, every call is timed in ROUNDS rounds of all
calls one after another, and a call's figure is its best round, so slow
spells of a shared machine hit rounds, not calls. Issue #29's rows (module
weights, tensor subclasses, a small module) compare calls that share most of
their code; they are timed in their own rounds, in alternating order, so
that neither side of a pair always runs on caches the other left.

    python benchmarks/bench_torch.py --breakdown

times instead what each check of the two-argument fast path costs: the op's
generated call code with that one check replaced by ``True`` (rebuilt from
its own source, in the same globals) against the code as generated, in one
run. A check that changed shape in the generator makes this fail loudly.
"""

from __future__ import annotations

import argparse
import copy
import linecache
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see bench_dispatch.py

from collections.abc import Callable
from typing import Any

import torch
from _timing import Timed, best_ns

import customop
import customop.torch

ROUNDS = 40
FLOOR = "wrapper w(*a, **k) (the floor)"
FLOOR14 = "14 args: wrapper w(*a, **k)"
CLONE = "x.clone() alone (taken off custom_op rows)"
TORCH_FLOOR = "floor: wrapper + torch's checks, no customop"
OBJECT_FLOOR = "floor: the same checks in an object's __call__"


def kernel(x: Any, y: Any) -> Any:
    return x


def wrapper(*args: Any, **kwargs: Any) -> Any:
    return kernel(*args, **kwargs)


_C: Any = torch._C
_TENSOR = torch.Tensor
_dynamo, _htf, _dstack, _grad = (
    torch.compiler.is_dynamo_compiling,
    _C._has_torch_function_unary,
    _C._len_torch_dispatch_stack,
    _C.is_grad_enabled,
)


def checking_wrapper(x: Any, y: Any) -> Any:
    """The wrapper plus only the questions torch's semantics make every eager call ask
    (issue #14 §3): under Dynamo? a subclass? a function mode? a dispatch mode? grad needed? No
    customop; what any fast path that keeps those semantics costs at least."""
    if _dynamo() or _htf(x) or _dstack() or ((x.requires_grad or y.requires_grad) and _grad()):
        raise AssertionError("the benchmark runs with none of these")
    return kernel(x, y)


class CheckingOp:
    """`checking_wrapper` as an op object's ``__call__``, the spelling the object row
    times: Python calls an instance through its type's ``__call__`` slot (no
    vectorcall), which costs more than calling a function."""

    def __call__(self, x: Any, y: Any) -> Any:
        if (  # the same questions as checking_wrapper's, inline: no extra frame
            _dynamo()
            or type(x) is not _TENSOR
            or type(y) is not _TENSOR
            or _htf(x)
            or _dstack()
            or ((x.requires_grad or y.requires_grad) and _grad())
        ):
            raise AssertionError("the benchmark runs with none of these")
        return kernel(x, y)


def cloning(x: Any, y: Any) -> Any:
    # torch's custom_op refuses an output that is an input: its kernel clones, and the
    # clone's own cost (timed alone) is taken off its figure.
    return x.clone()


SCHEMA14 = (
    "(Tensor q, Tensor k, Tensor v, Tensor? bias, Tensor? mask, float scale, float dropout, "
    "bool causal, int window_left, int window_right, float softcap, Tensor? alibi, "
    "bool deterministic, bool return_lse) -> Tensor"
)


def kernel14(  # noqa: PLR0917 -- the 14 positional parameters pytorch#177109 measures
    q: Any,
    k: Any,
    v: Any,
    bias: Any,
    mask: Any,
    scale: float,
    dropout: float,
    causal: bool,
    window_left: int,
    window_right: int,
    softcap: float,
    alibi: Any,
    deterministic: bool,
    return_lse: bool,
) -> Any:
    return q


def wrapper14(*args: Any, **kwargs: Any) -> Any:
    return kernel14(*args, **kwargs)


def cloning14(q: Any, *rest: Any) -> Any:
    return q.clone()


def two_arg_calls() -> Timed:
    @customop.custom_op("benchct::f", mutates_args=())
    def f(x: customop.Tensor, y: customop.Tensor) -> customop.Tensor:
        return x

    customop.torch.register(f)
    ops = customop.ops
    torch_f = torch.library.custom_op(
        "benchtc::f", cloning, mutates_args=(), schema="(Tensor x, Tensor y) -> Tensor"
    )
    lib = torch.library.Library("benchtl", "DEF")
    lib.define("g(Tensor x, Tensor y) -> Tensor")
    lib.impl("g", kernel, "CPU")
    two_arg_calls.keep = lib  # type: ignore[attr-defined]  # must outlive the timing
    two_arg_calls.op = f  # type: ignore[attr-defined]  # the object, for subclass_calls
    g = torch.ops.benchtl.g.default
    t = torch.zeros(4)
    checking_op = CheckingOp()
    return {
        "kernel(x, y) directly": (lambda: kernel(t, t), 20_000),
        FLOOR: (lambda: wrapper(t, t), 20_000),
        TORCH_FLOOR: (lambda: checking_wrapper(t, t), 20_000),
        OBJECT_FLOOR: (lambda: checking_op(t, t), 20_000),
        "customop op object  f(x, y)": (lambda: f(t, t), 20_000),
        "customop inline     customop.ops.benchct.f(x, y)": (lambda: ops.benchct.f(t, t), 20_000),
        "customop op inline  torch.ops.benchct.f(x, y)": (lambda: torch.ops.benchct.f(t, t), 2_000),
        CLONE: (t.clone, 4_000),
        "torch.library.custom_op  f(x, y)": (lambda: torch_f(t, t), 1_000),
        "torch Library op (define + impl)": (lambda: g(t, t), 4_000),
    }


def fourteen_arg_calls() -> Timed:
    customop.custom_op("benchct::f14", kernel14, mutates_args=(), schema=SCHEMA14)
    customop.torch.register("benchct::f14")
    f14 = customop.ops.benchct.f14
    torch_f14 = torch.library.custom_op("benchtc::f14", cloning14, mutates_args=(), schema=SCHEMA14)
    t = torch.zeros(4)
    args = (t, t, t, None, None, 0.5, 0.0, True, -1, -1, 0.0, None, False, False)
    return {
        FLOOR14: (lambda: wrapper14(*args), 10_000),
        "14 args: customop.ops.benchct.f14(...)": (lambda: f14(*args), 10_000),
        "14 args: torch.library.custom_op": (lambda: torch_f14(*args), 500),
    }


def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
    ctx.save_for_backward(inputs[1])


def backward(ctx: Any, grad: Any) -> Any:
    (y,) = ctx.saved_tensors
    return grad * y, None


def grad_calls() -> Timed:
    def mul(x: Any, y: Any) -> Any:
        return x * y

    op = customop.custom_op(
        "benchct::mul", mul, mutates_args=(), schema="(Tensor x, Tensor y) -> Tensor"
    )
    op.register_fake(lambda x, y: customop.empty_like(x))
    op.register_autograd(backward, setup_context=setup_context)
    customop.torch.register(op)
    torch_op = torch.library.custom_op(
        "benchtc::mul", mul, mutates_args=(), schema="(Tensor x, Tensor y) -> Tensor"
    )
    torch_op.register_autograd(backward, setup_context=setup_context)
    x = torch.ones(4, requires_grad=True)
    y = torch.ones(4)

    def step(fn: Callable[[Any, Any], Any]) -> Callable[[], None]:
        def run() -> None:
            fn(x, y).sum().backward()

        return run

    return {
        "grad: customop op forward": (lambda: op(x, y), 500),
        "grad: torch custom_op forward": (lambda: torch_op(x, y), 500),
        "grad: customop op forward + backward": (step(op), 200),
        "grad: torch custom_op forward + backward": (step(torch_op), 200),
    }


class _FunctionTensor(torch.Tensor):
    """A subclass with a __torch_function__ of its own: calls keep torch's full path."""

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return super().__torch_function__(func, types, args, kwargs or {})


PARAM = "param: customop object f(x, w), w an nn.Parameter, no_grad"
PLAIN = "param: customop object f(x, w), w a plain tensor, no_grad"
SUBCLASS = "subclass: customop object f(x, w), x a __torch_function__ subclass"
SUBCLASS_PACKET = "subclass: customop.ops.benchct.f(x, w) written inline, the same x"
SUBCLASS_OVERLOAD = "subclass: customop.ops.benchct.f.default(x, w), the same x"
SUBCLASS_TORCH = "subclass: torch.ops.benchct.f.default(x, w), the same x"
SUBCLASS_TORCH_INLINE = "subclass: torch.ops.benchct.f(x, w) written inline, the same x"
SUBCLASS_FLOOR = "subclass: floor, an object handing the call to torch's C callable"
SUBCLASS_SECOND = "subclass: customop object f(t, w), w the subclass"
SUBCLASS_SECOND_TORCH = "subclass: torch.ops.benchct.f.default(t, w), w the subclass"


def parameter_calls() -> Timed:
    """Issue #29: module weights are nn.Parameters; other subclasses keep torch's path."""
    f = customop.ops.benchct.f  # two_arg_calls defined and registered it
    t = torch.zeros(4)
    weight = torch.nn.Parameter(torch.zeros(4))
    frozen = torch.nn.Parameter(torch.zeros(4), requires_grad=False)

    set_grad = torch._C._set_grad_enabled

    def no_grad(call: Callable[[], object]) -> Callable[[], object]:
        # Grad mode switched off and on by its C setter in both rows alike: a
        # `with torch.no_grad()` block would cost more than the call itself.
        def run() -> object:
            set_grad(False)
            result = call()
            set_grad(True)
            return result

        return run

    return {
        PLAIN: (no_grad(lambda: f(t, t)), 10_000),
        PARAM: (no_grad(lambda: f(t, weight)), 10_000),
        "param: the same, nn.Parameter(requires_grad=False)": (
            no_grad(lambda: f(t, frozen)),
            10_000,
        ),
        "param: customop object, grad mode on, frozen Parameter": (lambda: f(t, frozen), 10_000),
    }


class _HandOver:
    """The least an op object that hands a subclass's call to torch costs: its own
    ``__call__``, Dynamo's check, and the C callable torch's ``OpOverload.__call__``
    calls (no gate, no customop)."""

    def __init__(self, op: Any) -> None:
        self.op, self.entry = op, op._op

    def __call__(self, x: Any, y: Any) -> Any:
        if _dynamo():
            return self.op(x, y)
        return self.entry(x, y)


def subclass_calls() -> Timed:
    """Issue #29's slow path: a __torch_function__ subclass, in every spelling, against
    torch's op and the hand-over floor (timed with `best_ns(alternate=True)`: these
    calls share most of their code, and the one timed second ran on warm caches)."""
    obj = two_arg_calls.op  # type: ignore[attr-defined]  # defined and registered there
    overload = customop.ops.benchct.f.default  # bound once, as torch's row binds its op
    t = torch.zeros(4)
    sub = torch.zeros(4).as_subclass(_FunctionTensor)
    default = torch.ops.benchct.f.default
    floor = _HandOver(default)
    return {
        SUBCLASS: (lambda: obj(sub, t), 300),
        SUBCLASS_PACKET: (lambda: customop.ops.benchct.f(sub, t), 300),  # as torch code
        SUBCLASS_OVERLOAD: (lambda: overload(sub, t), 300),
        SUBCLASS_TORCH: (lambda: default(sub, t), 300),
        SUBCLASS_TORCH_INLINE: (lambda: torch.ops.benchct.f(sub, t), 300),
        SUBCLASS_FLOOR: (lambda: floor(sub, t), 300),
        SUBCLASS_SECOND: (lambda: obj(t, sub), 300),
        SUBCLASS_SECOND_TORCH: (lambda: default(t, sub), 300),
    }


class _Model(torch.nn.Module):
    """Linear -> op -> Linear, the op given the first layer's weight-shaped Parameter."""

    def __init__(self, op: Callable[..., Any]) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.first = torch.nn.Linear(8, 8)
        self.scale = torch.nn.Parameter(torch.ones(8))
        self.second = torch.nn.Linear(8, 8)
        self.op = op

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.op(self.first(x), self.scale))


def _scale(x: Any, w: Any) -> Any:
    return x * w


def _scale_backward(ctx: Any, grad: Any) -> Any:
    x, w = ctx.saved_tensors
    return grad * w, (grad * x).sum(0)


def _scale_setup(ctx: Any, inputs: Any, output: Any) -> None:
    ctx.save_for_backward(*inputs)


def module_calls() -> Timed:
    """The op inside a small module: forward, and a training step (forward + backward)."""
    schema = "(Tensor x, Tensor w) -> Tensor"
    ours = customop.custom_op("benchct::scale", _scale, mutates_args=(), schema=schema)
    ours.register_fake(lambda x, w: customop.empty_like(x))
    ours.register_autograd(_scale_backward, setup_context=_scale_setup)
    customop.torch.register(ours)
    theirs = torch.library.custom_op("benchtc::scale", _scale, mutates_args=(), schema=schema)
    theirs.register_fake(lambda x, w: torch.empty_like(x))
    theirs.register_autograd(_scale_backward, setup_context=_scale_setup)
    models = {
        "customop op": _Model(ours),
        "torch custom_op": _Model(theirs),
        "plain function": _Model(_scale),
    }
    x = torch.randn(16, 8)
    timed: Timed = {}
    for name, model in models.items():

        def forward(model: torch.nn.Module = model) -> object:
            with torch.no_grad():
                return model(x)

        def step(model: torch.nn.Module = model) -> None:
            model(x).sum().backward()

        timed[f"module: {name}, forward (no_grad)"] = (forward, 2_000)
        timed[f"module: {name}, training step"] = (step, 300)
    return timed


def _report_issue_29(ns: dict[str, float]) -> None:
    param, plain, torch_op = ns[PARAM], ns[PLAIN], ns[SUBCLASS_TORCH]
    print(
        f"\nissue #29: Parameter weight {param / plain:.2f}x the plain-tensor call (<= 1.2x); "
        f"__torch_function__ subclass {ns[SUBCLASS] / torch_op:.2f}x (object), "
        f"{ns[SUBCLASS_PACKET] / torch_op:.2f}x (customop.ops inline; "
        f"{ns[SUBCLASS_PACKET] / ns[SUBCLASS_TORCH_INLINE]:.2f}x torch.ops inline), "
        f"{ns[SUBCLASS_OVERLOAD] / torch_op:.2f}x (overload) torch.ops.ns.name.default's "
        f"cost (<= 1.1x; the hand-over floor {ns[SUBCLASS_FLOOR] / torch_op:.2f}x); the "
        f"subclass in the second argument {ns[SUBCLASS_SECOND] / ns[SUBCLASS_SECOND_TORCH]:.2f}x"
    )
    step = ns["module: customop op, training step"] / ns["module: torch custom_op, training step"]
    fwd = ns["module: customop op, forward (no_grad)"]
    print(
        f"module Linear -> op -> Linear: training step {step:.2f}x torch custom_op's (<= 1x); "
        f"forward {fwd / ns['module: torch custom_op, forward (no_grad)']:.2f}x torch "
        f"custom_op's, {fwd / ns['module: plain function, forward (no_grad)']:.2f}x a plain "
        "Python function's"
    )


def main() -> None:
    timed = {
        **two_arg_calls(),
        **fourteen_arg_calls(),
        **grad_calls(),
    }
    ns = best_ns(timed, ROUNDS)
    # Issue #29's rows compare calls that share most of their code: alternated.
    issue_29 = {**parameter_calls(), **subclass_calls(), **module_calls()}
    ns.update(best_ns(issue_29, ROUNDS, alternate=True))
    for name in ("torch.library.custom_op  f(x, y)", "14 args: torch.library.custom_op"):
        ns[name] -= ns[CLONE]
    floor, floor14 = ns[FLOOR], ns[FLOOR14]
    print(f"{'call':<56} {'ns':>9} {'x wrapper':>10}")
    for name, value in ns.items():
        base = floor14 if name.startswith("14 args") else floor
        shown = (
            f"{value / base:>10.2f}"
            if name.startswith(("14", "kernel", "wrapper", "floor", "customop", "torch", "x."))
            else f"{'':>10}"
        )
        print(f"{name:<56} {value:>9.0f} {shown}")
    obj, inline = (
        ns["customop op object  f(x, y)"],
        ns["customop inline     customop.ops.benchct.f(x, y)"],
    )
    custom_op, library = (
        ns["torch.library.custom_op  f(x, y)"],
        ns["torch Library op (define + impl)"],
    )
    f14 = ns["14 args: customop.ops.benchct.f14(...)"]
    print(
        f"\ntargets (fast path): object {obj / floor:.2f}x, inline {inline / floor:.2f}x the "
        f"wrapper (<= 2x); {custom_op / obj:.0f}x faster than torch custom_op (>= 20x); "
        f"{library / obj:.1f}x faster than a torch Library op (>= 3x)"
    )
    print(
        f"torch's checks alone, no customop: {ns[TORCH_FLOOR] / floor:.2f}x the wrapper in a "
        f"function, {ns[OBJECT_FLOOR] / floor:.2f}x in an object's __call__ (the least any op "
        "object keeping torch's semantics costs)"
    )
    print(
        f"14 args: {f14 / floor14:.2f}x the wrapper, "
        f"{ns['14 args: torch.library.custom_op'] / f14:.0f}x faster than torch custom_op"
    )
    fwd = ns["grad: customop op forward"] / ns["grad: torch custom_op forward"]
    both = (
        ns["grad: customop op forward + backward"] / ns["grad: torch custom_op forward + backward"]
    )
    print(
        f"with grad inputs: forward {fwd:.2f}x, forward + backward {both:.2f}x torch "
        "custom_op's cost (<= 1x)"
    )
    _report_issue_29(ns)


#: Each fast-path check of benchct::probe's generated code, and the text it is in there.
CHECKS = {
    "Dynamo check  is_dynamo_compiling()": ["_co_dynamo()"],
    "customop's local keys": ["(_co_c[0] is _co_state.default or _co_c[0] is _co_local())"],
    "argument types against the entry's": ["_co_type(x) is _co_c[1]", "_co_type(y) is _co_c[2]"],
    "no surplus / unknown arguments": ["not _co_extra", "not _co_unknown"],
    "function modes  has_torch_function_unary(x)": ["not _co_htf(x)"],
    "dispatch modes  _len_torch_dispatch_stack()": ["not _co_dstack()"],
    "x.requires_grad, y.requires_grad": [
        "(not (x.requires_grad or y.requires_grad) or not _co_grad())"
    ],
    "the entry's one-kernel-for-every-device flag": ["(_co_c[4] or (x.is_cpu and y.is_cpu))"],
}
AS_GENERATED = "the call code as generated"
NO_CHECKS = "no check at all: the object call and the kernel"


def _probe(op: Any, source: str) -> Callable[..., Any]:
    """``op`` calling through ``source``: its generated code with some checks taken out."""
    generated = type(op).__call__
    namespace = type(op)._co_torch_call.namespace
    exec(compile(source, "<bench_torch probe>", "exec"), namespace)
    function = namespace.pop("__call__")
    function.__defaults__ = generated.__defaults__
    probe = copy.copy(op)
    probe.__class__ = type("probe", (type(op),), {"__call__": function})
    return probe  # type: ignore[no-any-return]


def _without(source: str, texts: list[str]) -> str:
    for text in texts:
        if text not in source:
            raise SystemExit(f"the generated code no longer holds {text!r}: update CHECKS")
        source = source.replace(text, "False" if text == "_co_dynamo()" else "True")
    return source


def breakdown() -> None:
    """ns each fast-path check costs: the call as generated, less the call without it."""
    probe_op = customop.custom_op(
        "benchct::probe", kernel, mutates_args=(), schema="(Tensor x, Tensor y) -> Tensor"
    )
    customop.torch.register(probe_op)
    t = torch.zeros(4)
    probe_op(t, t)  # fills the fast path's entry
    source = "".join(linecache.getlines(type(probe_op).__call__.__code__.co_filename))
    variants = {AS_GENERATED: source}
    variants |= {name: _without(source, texts) for name, texts in CHECKS.items()}
    variants[NO_CHECKS] = _without(source, [text for texts in CHECKS.values() for text in texts])
    probes = {name: _probe(probe_op, text) for name, text in variants.items()}
    namespace = type(probe_op)._co_torch_call.namespace
    slow = namespace["_co_route"], namespace["_co_op"]
    namespace["_co_route"] = namespace["_co_op"] = None  # a probe off the fast path fails
    for probe in probes.values():
        probe(t, t)
    namespace["_co_route"], namespace["_co_op"] = slow
    timed: Timed = {name: (lambda p=p: p(t, t), 20_000) for name, p in probes.items()}
    timed[FLOOR] = (lambda: wrapper(t, t), 20_000)
    ns = best_ns(timed, ROUNDS)
    full = ns[AS_GENERATED]
    print(f"{'the two-argument fast path':<52} {'ns':>9} {'x wrapper':>10}")
    for name in (FLOOR, AS_GENERATED, NO_CHECKS):
        print(f"{name:<52} {ns[name]:>9.0f} {ns[name] / ns[FLOOR]:>10.2f}")
    print(f"\n{'check (ns saved without it)':<52} {'ns':>9}")
    for name in CHECKS:
        print(f"{name:<52} {full - ns[name]:>9.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--breakdown", action="store_true", help="time each fast-path check")
    breakdown() if parser.parse_args().breakdown else main()
