// An IMPL-only library: its op is defined elsewhere (a Python def), or not at all (dangling).
#include <customop/library.h>

namespace {
customop::Tensor scale(customop::TensorView x, int64_t k) {
  customop::Tensor out = customop::empty_like(x);
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<double>()[i] = x.data_ptr<double>()[i] * k;
  return out;
}
}  // namespace

CUSTOMOP_LIBRARY_IMPL(cppimpl, CPU, m) { m.impl("scale", &scale); }
