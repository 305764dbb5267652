// customop/tensor.h: the C++ types of customop kernels, over DLPack's DLTensor.
//
// A kernel sees its tensor arguments as `customop::TensorView`s: a pointer to
// the caller's DLTensor (numpy, torch, ... through DLPack, zero-copy). It makes
// new tensors with `customop::empty_like` / `customop::empty`, which own their
// memory (`customop::Tensor`). Part of the header-only library included by
// <customop/library.h>; see docs/cpp.md for the type table.
#pragma once

#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace customop {

// -- errors -------------------------------------------------------------------

// What CUSTOMOP_CHECK throws; customop turns it (and any std::exception a
// kernel throws) into a Python customop.exceptions.KernelError naming the op.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <class T, class... Rest>
void append(std::ostringstream& out, const T& value, const Rest&... rest) {
  out << value;
  append(out, rest...);
}
template <class... Parts>
[[noreturn]] void check_failed(const char* cond, const char* file, int line,
                               const Parts&... parts) {
  std::ostringstream out;
  append(out, parts...);
  if (sizeof...(parts) == 0) out << "check failed: " << cond;
  out << " (CUSTOMOP_CHECK(" << cond << ") at " << file << ":" << line << ")";
  throw Error(out.str());
}
}  // namespace detail

// CUSTOMOP_CHECK(cond, message parts...): throw customop::Error unless cond holds.
#define CUSTOMOP_CHECK(cond, ...)                                                 \
  do {                                                                            \
    if (!(cond)) {                                                                \
      ::customop::detail::check_failed(#cond, __FILE__, __LINE__, ##__VA_ARGS__); \
    }                                                                             \
  } while (0)

// -- dtypes and devices -------------------------------------------------------

// An element type: DLPack's DLDataType (schema type ScalarType).
struct ScalarType {
  DLDataType dl;
  constexpr bool operator==(const ScalarType& o) const {
    return dl.code == o.dl.code && dl.bits == o.dl.bits && dl.lanes == o.dl.lanes;
  }
  constexpr bool operator!=(const ScalarType& o) const { return !(*this == o); }
  constexpr int64_t itemsize() const { return (dl.bits * dl.lanes + 7) / 8; }
  std::string name() const;
};

inline constexpr ScalarType kBool{{kDLBool, 8, 1}};
inline constexpr ScalarType kUInt8{{kDLUInt, 8, 1}};
inline constexpr ScalarType kInt8{{kDLInt, 8, 1}};
inline constexpr ScalarType kInt16{{kDLInt, 16, 1}};
inline constexpr ScalarType kInt32{{kDLInt, 32, 1}};
inline constexpr ScalarType kInt64{{kDLInt, 64, 1}};
inline constexpr ScalarType kFloat16{{kDLFloat, 16, 1}};
inline constexpr ScalarType kBFloat16{{kDLBfloat, 16, 1}};
inline constexpr ScalarType kFloat32{{kDLFloat, 32, 1}};
inline constexpr ScalarType kFloat64{{kDLFloat, 64, 1}};

inline std::string ScalarType::name() const {
  const char* base = dl.code == kDLInt      ? "int"
                     : dl.code == kDLUInt   ? "uint"
                     : dl.code == kDLFloat  ? "float"
                     : dl.code == kDLBfloat ? "bfloat"
                     : dl.code == kDLBool   ? "bool"
                                            : "code";
  if (dl.code == kDLBool) return "bool";
  return std::string(base) + std::to_string(dl.bits);
}

// The C++ element type of a dtype, for data_ptr<T>() checks.
template <class T>
constexpr ScalarType scalar_type_of();
template <> constexpr ScalarType scalar_type_of<bool>() { return kBool; }
template <> constexpr ScalarType scalar_type_of<uint8_t>() { return kUInt8; }
template <> constexpr ScalarType scalar_type_of<int8_t>() { return kInt8; }
template <> constexpr ScalarType scalar_type_of<int16_t>() { return kInt16; }
template <> constexpr ScalarType scalar_type_of<int32_t>() { return kInt32; }
template <> constexpr ScalarType scalar_type_of<int64_t>() { return kInt64; }
template <> constexpr ScalarType scalar_type_of<float>() { return kFloat32; }
template <> constexpr ScalarType scalar_type_of<double>() { return kFloat64; }

// A device: DLPack's DLDevice (schema type Device).
struct Device {
  DLDevice dl;
  bool is_cpu() const { return dl.device_type == kDLCPU; }
  bool operator==(const Device& o) const {
    return dl.device_type == o.dl.device_type && dl.device_id == o.dl.device_id;
  }
  std::string str() const {
    std::string type = dl.device_type == kDLCPU ? "cpu" : dl.device_type == kDLCUDA ? "cuda"
                                                                                     : "device";
    return type + ":" + std::to_string(dl.device_id);
  }
};

inline constexpr Device kCPU{{kDLCPU, 0}};

// -- spans --------------------------------------------------------------------

// A read-only run of values (schema int[] -> Span<int64_t>, Tensor[] -> Span<TensorView>).
template <class T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(const T* data, size_t size) : data_(data), size_(size) {}
  Span(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  Span(std::initializer_list<T> l) : data_(l.begin()), size_(l.size()) {}  // NOLINT
  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

using IntArrayRef = Span<int64_t>;

// -- tensors ------------------------------------------------------------------

// A view of the caller's tensor (schema Tensor; mutable, for Tensor(a!) too).
class TensorView {
 public:
  TensorView() = default;
  explicit TensorView(DLTensor* t) : t_(t) {}

  int64_t ndim() const { return t_->ndim; }
  int64_t size(int64_t i) const { return t_->shape[wrap(i)]; }
  IntArrayRef sizes() const { return IntArrayRef(t_->shape, static_cast<size_t>(t_->ndim)); }
  // DLPack allows strides == nullptr for a compact row-major tensor.
  int64_t stride(int64_t i) const {
    i = wrap(i);
    if (t_->strides != nullptr) return t_->strides[i];
    int64_t s = 1;
    for (int64_t j = t_->ndim - 1; j > i; --j) s *= t_->shape[j];
    return s;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t i = 0; i < t_->ndim; ++i) n *= t_->shape[i];
    return n;
  }
  ScalarType dtype() const { return ScalarType{t_->dtype}; }
  Device device() const { return Device{t_->device}; }
  bool is_contiguous() const {
    if (t_->strides == nullptr) return true;
    int64_t expected = 1;
    for (int64_t i = t_->ndim - 1; i >= 0; --i) {
      if (t_->shape[i] != 1 && t_->strides[i] != expected) return false;
      expected *= t_->shape[i];
    }
    return true;
  }
  void* raw_data() const { return static_cast<char*>(t_->data) + t_->byte_offset; }
  // The data as T*, after checking that T is the tensor's element type.
  template <class T>
  T* data_ptr() const {
    constexpr ScalarType want = scalar_type_of<T>();
    if (dtype() != want) {
      throw Error("data_ptr<" + want.name() + ">() called on a " + dtype().name() +
                  " tensor: the kernel reads " + want.name() + " elements. Pass " +
                  want.name() + " arrays (e.g. x.astype('" + want.name() +
                  "')), or dispatch on x.dtype() in the kernel.");
    }
    return static_cast<T*>(raw_data());
  }
  DLTensor* dltensor() const { return t_; }

 private:
  int64_t wrap(int64_t i) const {
    int64_t d = i < 0 ? i + t_->ndim : i;
    if (d < 0 || d >= t_->ndim) {
      throw Error("dimension " + std::to_string(i) + " is out of range for a tensor with " +
                  std::to_string(t_->ndim) + " dimensions");
    }
    return d;
  }
  DLTensor* t_ = nullptr;
};

// A tensor the kernel made (empty, empty_like): owns its memory, returned to Python.
class Tensor : public TensorView {
 public:
  Tensor() = default;
  explicit Tensor(tvm::ffi::Tensor owner)
      : TensorView(const_cast<DLTensor*>(owner.GetDLTensorPtr())), owner_(std::move(owner)) {}
  const tvm::ffi::Tensor& owner() const { return owner_; }

 private:
  tvm::ffi::Tensor owner_;
};

namespace detail {
// Host memory for arrays whose framework offers no allocator (numpy): aligned
// like numpy's, freed by the DLPack deleter when the last array using it dies.
struct HostAlloc {
  void AllocData(DLTensor* t) {
    int64_t n = ScalarType{t->dtype}.itemsize();
    for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
    size_t bytes = static_cast<size_t>((n + 63) / 64 * 64);
    t->data = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
    if (t->data == nullptr) throw Error("out of memory allocating " + std::to_string(n) + " bytes");
  }
  void FreeData(DLTensor* t) { std::free(t->data); }
};
}  // namespace detail

// A new uninitialised tensor on `like`'s device. Memory comes from the caller's
// framework when it lends an allocator through DLPack (torch), else from the
// host heap; either way Python gets back an array of the caller's type.
inline Tensor empty(IntArrayRef sizes, ScalarType dtype, const TensorView& like) {
  tvm::ffi::ShapeView shape(sizes.data(), sizes.size());
  if (TVMFFIEnvGetDLPackManagedTensorAllocator() != nullptr) {
    return Tensor(tvm::ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, shape, dtype.dl,
                                                 like.device().dl));
  }
  CUSTOMOP_CHECK(like.device().is_cpu(), "empty: no allocator for device ", like.device().str(),
                 "; pass tensors of a framework that lends one (torch) or allocate outputs "
                 "in Python (destination passing)");
  return Tensor(tvm::ffi::Tensor::FromNDAlloc(detail::HostAlloc(), shape, dtype.dl,
                                              like.device().dl));
}

inline Tensor empty(std::initializer_list<int64_t> sizes, ScalarType dtype,
                    const TensorView& like) {
  return empty(IntArrayRef(sizes.begin(), sizes.size()), dtype, like);
}

inline Tensor empty_like(const TensorView& like) { return empty(like.sizes(), like.dtype(), like); }

}  // namespace customop
