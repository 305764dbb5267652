import cProfile, pstats, numpy as np, customop
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
vjp(chain, x, dispatcher=d)
cProfile.run("for _ in range(5): vjp(chain, x, dispatcher=d)", "/tmp/prof")
pstats.Stats("/tmp/prof").sort_stats("tottime").print_stats(15)
