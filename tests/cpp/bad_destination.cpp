// An .out_from_fake() kernel whose C++ type does not take its outputs (it returns one).
#include <customop/library.h>

namespace {
customop::Tensor twice(customop::TensorView x) { return customop::empty_like(x); }
}  // namespace

CUSTOMOP_LIBRARY(cppdest, m) { m.def("twice(Tensor x) -> Tensor"); }
CUSTOMOP_LIBRARY_IMPL(cppdest, CPU, m) { m.impl("twice", &twice).out_from_fake(); }
