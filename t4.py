import timeit, torch
x = torch.randn(3); y = torch.randn(3)
C = torch._C
g = dict(x=x, y=y, C=C, torch=torch)
for stmt in ["torch.compiler.is_dynamo_compiling()", "C._len_torch_dispatch_stack()", "C._is_torch_function_mode_enabled()", "C._are_functorch_transforms_active()", "C.is_grad_enabled()", "x.requires_grad", "x.is_cpu", "type(x)"]:
    print(f"{stmt:45s}", round(min(timeit.repeat(stmt, globals=g, number=100000, repeat=5))/100000*1e9,1))
