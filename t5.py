import timeit, torch
x = torch.randn(3); y = torch.randn(3)
C = torch._C
def kernel(x, y): return x
def w(*a, **k): return kernel(*a, **k)
src = '''
def f0(x, y): return kernel(x, y)
def f_dyn(x, y):
    if dyn(): return None
    return kernel(x, y)
def f_dstack(x, y):
    if dstack(): return None
    return kernel(x, y)
def f_fmode(x, y):
    if fmode(): return None
    return kernel(x, y)
def f_ft(x, y):
    if ft(): return None
    return kernel(x, y)
def f_grad(x, y):
    if grad(): return kernel(x, y)
    return kernel(x, y)
def f_rg(x, y):
    if x.requires_grad or y.requires_grad: return None
    return kernel(x, y)
def f_cpu(x, y):
    if x.is_cpu and y.is_cpu: return kernel(x, y)
def f_htf(x, y):
    if htf(x, y): return None
    return kernel(x, y)
def f_type(x, y):
    if type(x) is T and type(y) is T: return kernel(x, y)
def f_dev(x, y):
    if x.device is D: return kernel(x, y)
    return kernel(x, y)
'''
g = dict(kernel=kernel, dyn=torch.compiler.is_dynamo_compiling, dstack=C._len_torch_dispatch_stack, fmode=C._is_torch_function_mode_enabled,
 ft=C._are_functorch_transforms_active, grad=C.is_grad_enabled, htf=C._has_torch_function_variadic, T=torch.Tensor, D=x.device)
exec(src, g)
names = ["w"] + [k for k in g if k.startswith("f") and k not in ("fmode", "ft")]
g["w"] = w
res = {k: [] for k in names}
for _ in range(7):
    for k in names:
        res[k].append(timeit.timeit(f"{k}(x, y)", globals={**g, "x": x, "y": y}, number=100000)/100000*1e9)
base = min(res["f0"])
for k in names: print(f"{k:10s} {min(res[k]):7.1f}  extra over f0: {min(res[k])-base:6.1f}")
src2 = '''
def f_arg(x, y):
    if arg(x, y): return None
    return kernel(x, y)
'''
g["arg"] = C._any_requires_grad
exec(src2, g)
r=[timeit.timeit("f_arg(x, y)", globals={**g, "x": x, "y": y}, number=100000)/100000*1e9 for _ in range(7)]
print("f_arg", min(r)-base)
