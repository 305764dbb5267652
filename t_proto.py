import builtins, torch, customop
from customop import ops
@customop.custom_op("probe::add", mutates_args=())
def add(x: customop.Tensor, y: customop.Tensor) -> customop.Tensor:
    return x + y
add.register_fake(lambda x, y: customop.empty_like(x))
lib = torch.library.Library("probe", "FRAGMENT")
lib.define("add(Tensor x, Tensor y) -> Tensor")
lib.impl("add", lambda x, y: x + y, "CompositeExplicitAutograd")
torch.library.register_fake("probe::add", lambda x, y: torch.empty_like(x), lib=lib)
top = torch.ops.probe.add.default
src = '''
def __call__(_co_self, x, y, *_co_extra, **_co_unknown):
    if _co_dynamo():
        return _co_op(x, y)
    return _co_kernel(x, y)
'''
g = {"__builtins__": builtins, "_co_dynamo": torch.compiler.is_dynamo_compiling, "_co_op": top, "_co_kernel": lambda x, y: x + y}
exec(compile(src, "<customop torch probe::add>", "exec"), g)
fn = g["__call__"]
add.op  # bind
add.__class__ = type("CustomOpDef[probe::add]+torch", (customop.CustomOpDef,), {"__call__": fn})
ns = ops.probe; packet = ns.add
packet.__class__ = type("P", (type(packet),), {"__call__": fn})
ops.__dict__["probe"] = ns; ns.__dict__["add"] = packet
import torch._dynamo as dyn
def f1(x, y): return ops.probe.add(x, y) * 2
def f2(x, y): return add(x, y) * 2
def f3(x, y): return torch.ops.probe.add(x, y) * 2
x = torch.randn(3); y = torch.randn(3)
for f in (f1, f2, f3):
    for backend in ("eager", "aot_eager"):
        try:
            c = torch.compile(f, fullgraph=True, backend=backend)
            print(f.__name__, backend, torch.equal(c(x, y), f(x, y)))
        except Exception as e:
            print(f.__name__, "ERR", type(e), str(e)[:1500])
    ex = dyn.explain(f)(x, y); print(ex.graphs[0].code if ex.graphs else None)
