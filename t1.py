import torch, customop
import customop.torch as ct
@customop.custom_op("probe::add", mutates_args=())
def add(x: customop.Tensor, y: customop.Tensor) -> customop.Tensor:
    return x + y
add.register_fake(lambda x, y: customop.empty_like(x))
h = ct.register(add)
x = torch.randn(3); y = torch.randn(3)
print(add(x, y), torch.ops.probe.add(x, y), customop.ops.probe.add(x, y))
def f(x, y): return add(x, y) * 2 + customop.ops.probe.add(x, y) + torch.ops.probe.add(x, y) + customop.ops.probe.add.default(x, y)
c = torch.compile(f, fullgraph=True, backend="aot_eager")
print(torch.allclose(c(x, y), f(x, y)))
import torch._dynamo as dyn
print(dyn.explain(f)(x, y).graphs[0].code)
print(torch.library.opcheck(torch.ops.probe.add.default, (x, y)))
h.remove()
print(hasattr(torch.ops.probe, "add"), add(x, y))
