import timeit, torch, customop
import customop.torch as ct
@customop.custom_op("probe::add", mutates_args=())
def add(x: customop.Tensor, y: customop.Tensor) -> customop.Tensor:
    return x
ct.register(add)
x = torch.randn(3); y = torch.randn(3)
add(x, y)
call = type(add)._co_torch_call
ns = call.namespace
f = call.function
def t(stmt, g):
    return min(timeit.repeat(stmt, globals=g, number=50000, repeat=5))/50000*1e9
print("full", t("f(None, x, y)", {"f": f, "x": x, "y": y}))
lines = ["_co_dynamo()", "_co_c = _co_cache", "(_co_c[0] is _co_state.default or _co_c[0] is _co_local())", "_co_type(x) is _co_c[1]", "_co_htf(x, y)", "_co_dstack()", "(not (x.requires_grad or y.requires_grad) or not _co_grad())", "(_co_c[4] or (x.is_cpu and y.is_cpu))", "_co_c[3](x, y)"]
g = dict(ns); g.update(x=x, y=y, _co_c=ns["_co_cache"])
for l in lines:
    print(f"{l:70s}", round(t(l, g),1))
print(ns["_co_state"].default)
