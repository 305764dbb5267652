import time, gc, numpy as np, customop
from customop import Dispatcher
from customop.autograd import vjp
d = Dispatcher()
@customop.custom_op("benchad::neg", mutates_args=(), dispatcher=d)
def neg(x: np.ndarray) -> np.ndarray:
    return np.negative(x)
neg.register_autograd(lambda ctx, g: neg(g))
x = np.ones(4, dtype=np.float32)
def chain(x):
    for _ in range(1000):
        x = neg(x)
    return x
for disabled in (False, True, False, True):
    if disabled: gc.disable()
    t=time.perf_counter(); 
    for _ in range(5): vjp(chain, x, dispatcher=d)
    print(disabled, (time.perf_counter()-t)/5000*1e6)
    gc.enable()
t=time.perf_counter(); chain(x); print("plain", (time.perf_counter()-t)/1000*1e6)
