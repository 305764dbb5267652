// The test library: every kernel shape tests/cpp exercises, compiled once per run.
#include <customop/library.h>

#include <cmath>
#include <stdexcept>

using customop::Span;
using customop::Tensor;
using customop::TensorView;

namespace {

// Run body<float> or body<double> for the tensor's dtype.
template <class Body>
void floating(const TensorView& t, Body body) {
  if (t.dtype() == customop::kFloat32) {
    body(float{});
  } else if (t.dtype() == customop::kFloat64) {
    body(double{});
  } else {
    CUSTOMOP_CHECK(false, "expected a float32 or float64 tensor, got ", t.dtype().name());
  }
}

void same_shape(const TensorView& a, const TensorView& b) {
  CUSTOMOP_CHECK(a.numel() == b.numel() && a.dtype() == b.dtype(),
                 "the tensors differ in size or dtype");
}

Tensor add(TensorView a, TensorView b) {
  same_shape(a, b);
  Tensor out = customop::empty_like(a);
  floating(a, [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.data_ptr<T>();
    const T* y = b.data_ptr<T>();
    T* o = out.data_ptr<T>();
    for (int64_t i = 0; i < a.numel(); ++i) o[i] = x[i] + y[i];
  });
  return out;
}

Tensor mul(TensorView a, TensorView b) {
  same_shape(a, b);
  Tensor out = customop::empty_like(a);
  floating(a, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < a.numel(); ++i) {
      out.data_ptr<T>()[i] = a.data_ptr<T>()[i] * b.data_ptr<T>()[i];
    }
  });
  return out;
}

void add_(TensorView x, TensorView y) {
  same_shape(x, y);
  floating(x, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < x.numel(); ++i) x.data_ptr<T>()[i] += y.data_ptr<T>()[i];
  });
}

// Normalise over the last dimension.
Tensor layer_norm(TensorView x, double eps) {
  CUSTOMOP_CHECK(x.ndim() >= 1, "layer_norm needs at least one dimension");
  Tensor out = customop::empty_like(x);
  int64_t n = x.size(-1);
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  floating(x, [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.data_ptr<T>();
    T* o = out.data_ptr<T>();
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i) mean += in[r * n + i];
      mean /= n;
      for (int64_t i = 0; i < n; ++i) var += (in[r * n + i] - mean) * (in[r * n + i] - mean);
      var /= n;
      for (int64_t i = 0; i < n; ++i) o[r * n + i] = T((in[r * n + i] - mean) / std::sqrt(var + eps));
    }
  });
  return out;
}

std::tuple<Tensor, Tensor> split_sign(TensorView x) {
  Tensor pos = customop::empty_like(x);
  Tensor neg = customop::empty_like(x);
  floating(x, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < x.numel(); ++i) {
      T v = x.data_ptr<T>()[i];
      pos.data_ptr<T>()[i] = v > 0 ? v : T(0);
      neg.data_ptr<T>()[i] = v < 0 ? v : T(0);
    }
  });
  return {pos, neg};
}

Tensor axpy(TensorView x, std::optional<TensorView> y, double alpha) {
  if (y) same_shape(x, *y);
  Tensor out = customop::empty_like(x);
  floating(x, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < x.numel(); ++i) {
      out.data_ptr<T>()[i] = T(alpha) * x.data_ptr<T>()[i] + (y ? y->data_ptr<T>()[i] : T(0));
    }
  });
  return out;
}

Tensor sum_all(Span<TensorView> xs) {
  CUSTOMOP_CHECK(!xs.empty(), "sum_all needs at least one tensor");
  Tensor out = customop::empty_like(xs[0]);
  floating(xs[0], [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<T>()[i] = T(0);
    for (const TensorView& t : xs) {
      same_shape(xs[0], t);
      for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<T>()[i] += t.data_ptr<T>()[i];
    }
  });
  return out;
}

// out[i, j] = x[i, j] * factors[i % len(factors)] + offset
Tensor scale_rows(TensorView x, Span<int64_t> factors, double offset) {
  CUSTOMOP_CHECK(x.ndim() == 2, "scale_rows takes a 2-d tensor, got ", x.ndim(), " dimensions");
  CUSTOMOP_CHECK(!factors.empty(), "scale_rows needs at least one factor");
  Tensor out = customop::empty_like(x);
  floating(x, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < x.size(0); ++i) {
      for (int64_t j = 0; j < x.size(1); ++j) {
        int64_t k = i * x.size(1) + j;
        out.data_ptr<T>()[k] = x.data_ptr<T>()[k] * T(factors[i % factors.size()]) + T(offset);
      }
    }
  });
  return out;
}

Tensor checked_sqrt(TensorView x) {
  Tensor out = customop::empty_like(x);
  const double* in = x.data_ptr<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    CUSTOMOP_CHECK(in[i] >= 0, "checked_sqrt: element ", i, " is negative (", in[i], ")");
    out.data_ptr<double>()[i] = std::sqrt(in[i]);
  }
  return out;
}

Tensor throws(TensorView) { throw std::out_of_range("index 7 is out of range"); }

Tensor cast(TensorView x, customop::ScalarType dtype) {
  Tensor out = customop::empty(x.sizes(), dtype, x);
  floating(x, [&](auto zero) {
    using In = decltype(zero);
    floating(out, [&](auto zero_out) {
      using Out = decltype(zero_out);
      for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<Out>()[i] = Out(x.data_ptr<In>()[i]);
    });
  });
  return out;
}

// Destination passing: the outputs come allocated from the op's fake impl.
void add_into(TensorView a, TensorView b, TensorView out) {
  same_shape(a, b);
  same_shape(a, out);
  floating(a, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < a.numel(); ++i) {
      out.data_ptr<T>()[i] = a.data_ptr<T>()[i] + b.data_ptr<T>()[i];
    }
  });
}

// Two outputs, the second of another shape and dtype: (x * k, sum of x as float64).
void scale_and_sum(TensorView x, double k, TensorView scaled, TensorView total) {
  floating(x, [&](auto zero) {
    using T = decltype(zero);
    double sum = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      scaled.data_ptr<T>()[i] = T(x.data_ptr<T>()[i] * k);
      sum += x.data_ptr<T>()[i];
    }
    total.data_ptr<double>()[0] = sum;
  });
}

}  // namespace

CUSTOMOP_LIBRARY(cpptest, m) {
  m.def("add(Tensor a, Tensor b) -> Tensor");
  m.def("add_(Tensor(a!) x, Tensor y) -> ()");
  m.def("layer_norm(Tensor x, float eps=1e-05) -> Tensor");
  m.def("split_sign(Tensor x) -> (Tensor, Tensor)");
  m.def("axpy(Tensor x, Tensor? y=None, float alpha=1.0) -> Tensor");
  m.def("sum_all(Tensor[] xs) -> Tensor");
  m.def("scale_rows(Tensor x, int[] factors=[1, 2], float offset=0.5) -> Tensor");
  m.def("checked_sqrt(Tensor x) -> Tensor");
  m.def("throws(Tensor x) -> Tensor");
  m.def("cast(Tensor x, ScalarType dtype) -> Tensor");
  m.def("mul", &mul);  // schema inferred from the C++ type
  m.def("add_dest(Tensor a, Tensor b) -> Tensor");
  m.def("scale_and_sum(Tensor x, *, float k=2.0) -> (Tensor, Tensor)");
}

CUSTOMOP_LIBRARY_IMPL(cpptest, CPU, m) {
  m.impl("add", &add).contiguous();
  m.impl("add_", &add_).contiguous();
  m.impl("layer_norm", &layer_norm).contiguous();
  m.impl("split_sign", &split_sign).contiguous();
  m.impl("axpy", &axpy).contiguous();
  m.impl("sum_all", &sum_all).contiguous();
  m.impl("scale_rows", &scale_rows).contiguous();
  m.impl("checked_sqrt", &checked_sqrt);
  m.impl("throws", &throws).keep_gil();
  m.impl("cast", &cast).contiguous();
  m.impl("add_dest", &add_into).out_from_fake().contiguous();
  m.impl("scale_and_sum", &scale_and_sum).contiguous();  // destination shape, no option
}
