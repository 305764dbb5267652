import torch
L = torch._C._len_torch_dispatch_stack
def f(x):
    if L():
        return x + 1
    return x - 1
try:
    print(torch.compile(f, fullgraph=True, backend="eager")(torch.ones(2)))
except Exception as e: print(type(e), str(e)[:500])
