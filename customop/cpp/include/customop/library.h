// customop/library.h: register C++ kernels as customop ops, the TORCH_LIBRARY way.
//
//   #include <customop/library.h>
//   customop::Tensor add(customop::TensorView a, customop::TensorView b) { ... }
//   CUSTOMOP_LIBRARY(mylib, m) { m.def("add(Tensor a, Tensor b) -> Tensor"); }
//   CUSTOMOP_LIBRARY_IMPL(mylib, CPU, m) { m.impl("add", &add); }
//
// The blocks run during static initialisation and only fill this library's
// registration records (no Python, no dispatcher). `customop.load_library`
// reads them through the plain C entry point `customop_library_records()` and
// registers them; calls reach the kernels through TVM-FFI's C ABI (DLPack
// tensors, zero-copy). See docs/cpp.md.
#pragma once

#include <customop/schema.h>
#include <customop/tensor.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

extern "C" {
// One registration record. Strings are never null ("" when absent).
typedef struct customop_record {
  int32_t kind;          // CUSTOMOP_RECORD_BLOCK, _DEF or _IMPL
  int32_t block;         // the block's kind: CUSTOMOP_BLOCK_DEF, _FRAGMENT or _IMPL
  const char* ns;        // namespace
  const char* key;       // dispatch key of the kernel ("" for none)
  const char* name;      // op name within ns ("add", "add.out"); "" for blocks
  const char* schema;    // schema text as written ("" when inferred)
  const char* inferred;  // schema inferred from the kernel's C++ type ("" without kernel)
  int32_t kernel;        // index for __tvm_ffi_customop_kernel, -1 without kernel
  int32_t flags;         // CUSTOMOP_FLAG_*
  const char* file;
  int32_t line;
} customop_record;

typedef struct customop_registry {
  uint32_t abi_version;  // CUSTOMOP_ABI_VERSION
  uint32_t count;
  const customop_record* records;
  const char* error;  // "" unless a block threw during static initialisation
} customop_registry;
}

#define CUSTOMOP_ABI_VERSION 1
#define CUSTOMOP_RECORD_BLOCK 0
#define CUSTOMOP_RECORD_DEF 1
#define CUSTOMOP_RECORD_IMPL 2
#define CUSTOMOP_BLOCK_DEF 0
#define CUSTOMOP_BLOCK_FRAGMENT 1
#define CUSTOMOP_BLOCK_IMPL 2
#define CUSTOMOP_FLAG_KEEP_GIL 1
#define CUSTOMOP_FLAG_CONTIGUOUS 2
#define CUSTOMOP_FLAG_OUT_FROM_FAKE 4

namespace customop {
namespace detail {

namespace ffi = tvm::ffi;

// What a kernel's boxed wrapper knows about its call (for checks and messages).
struct CallInfo {
  bool cpu_only;
  bool contiguous;
};

// "argument {customop-arg:2}": Python replaces the token with the schema's argument name
// (the C++ side knows only positions).
inline std::string arg_name(size_t i) {
  return "argument {customop-arg:" + std::to_string(i) + "}";
}

[[noreturn]] inline void bad_argument(size_t i, const char* want, const ffi::AnyView& got) {
  throw Error(arg_name(i) + " is a " + got.GetTypeKey() + ", the kernel takes " + want);
}

inline TensorView to_view(DLTensor* t, size_t i, const CallInfo& info) {
  TensorView view(t);
  if (info.cpu_only && !view.device().is_cpu()) {
    throw Error(arg_name(i) + " is on " + view.device().str() +
                ", the kernel is registered for CPU. Pass CPU arrays, or register a kernel for "
                "that device");
  }
  if (info.contiguous && !view.is_contiguous()) {
    throw Error(arg_name(i) +
                " is not contiguous, and the kernel was registered with .contiguous(). Pass a "
                "contiguous array (numpy.ascontiguousarray(x), x.contiguous())");
  }
  return view;
}

// Arg<T>: one unpacked argument; holds whatever storage its value points into.
template <class T>
struct Arg {
  static_assert(always_false<T>::value, "customop: unsupported kernel parameter type");
};

template <>
struct Arg<TensorView> {
  TensorView value;
  Arg(const ffi::AnyView& v, size_t i, const CallInfo& info) {
    auto t = v.try_cast<DLTensor*>();
    if (!t) bad_argument(i, "Tensor", v);
    value = to_view(*t, i, info);
  }
  const TensorView& get() const { return value; }
};

template <class S>
struct Scalar {
  S value;
  Scalar(const ffi::AnyView& v, size_t i, const CallInfo&) {
    auto got = v.try_cast<S>();
    if (!got) bad_argument(i, schema_type<S>::text, v);
    value = *got;
  }
  S get() const { return value; }
};
template <> struct Arg<int64_t> : Scalar<int64_t> { using Scalar::Scalar; };
template <> struct Arg<double> : Scalar<double> { using Scalar::Scalar; };
template <> struct Arg<bool> : Scalar<bool> { using Scalar::Scalar; };

template <>
struct Arg<ScalarType> {
  ScalarType value;
  Arg(const ffi::AnyView& v, size_t i, const CallInfo&) {
    auto got = v.try_cast<DLDataType>();
    if (!got) bad_argument(i, "ScalarType", v);
    value = ScalarType{*got};
  }
  ScalarType get() const { return value; }
};

template <>
struct Arg<Device> {
  Device value;
  Arg(const ffi::AnyView& v, size_t i, const CallInfo&) {
    auto got = v.try_cast<DLDevice>();
    if (!got) bad_argument(i, "Device", v);
    value = Device{*got};
  }
  Device get() const { return value; }
};

template <>
struct Arg<std::string_view> {
  ffi::String held;
  Arg(const ffi::AnyView& v, size_t i, const CallInfo&) {
    auto got = v.try_cast<ffi::String>();
    if (!got) bad_argument(i, "str", v);
    held = *got;
  }
  std::string_view get() const { return std::string_view(held.data(), held.size()); }
};

template <>
struct Arg<Span<int64_t>> {
  std::vector<int64_t> held;
  Arg(const ffi::AnyView& v, size_t i, const CallInfo&) {
    auto got = v.try_cast<ffi::Array<ffi::Any>>();
    if (!got) bad_argument(i, "int[]", v);
    held.reserve(got->size());
    for (const ffi::Any& item : *got) {
      auto n = item.try_cast<int64_t>();
      if (!n) throw Error(arg_name(i) + " holds a non-int item");
      held.push_back(*n);
    }
  }
  Span<int64_t> get() const { return Span<int64_t>(held); }
};

template <>
struct Arg<Span<TensorView>> {
  ffi::Array<ffi::Any> owner;
  std::vector<TensorView> held;
  Arg(const ffi::AnyView& v, size_t i, const CallInfo& info) {
    auto got = v.try_cast<ffi::Array<ffi::Any>>();
    if (!got) bad_argument(i, "Tensor[]", v);
    owner = *got;
    held.reserve(owner.size());
    for (const ffi::Any& item : owner) {
      auto t = item.try_cast<DLTensor*>();
      if (!t) throw Error(arg_name(i) + " holds a non-tensor item");
      held.push_back(to_view(*t, i, info));
    }
  }
  Span<TensorView> get() const { return Span<TensorView>(held); }
};

template <class T>
struct Arg<std::optional<T>> {
  std::optional<Arg<T>> inner;
  Arg(const ffi::AnyView& v, size_t i, const CallInfo& info) {
    if (v.type_index() != ffi::TypeIndex::kTVMFFINone) inner.emplace(v, i, info);
  }
  std::optional<bare<decltype(std::declval<Arg<T>>().get())>> get() const {
    if (!inner) return std::nullopt;
    return inner->get();
  }
};

// Returns: new tensors leave as their owning ffi::Tensor; tuples as an Array.
inline ffi::Any pack(const Tensor& t) {
  if (!t.owner().defined()) throw Error("the kernel returned an undefined Tensor");
  return ffi::Any(t.owner());
}
inline ffi::Any pack(int64_t v) { return ffi::Any(v); }
inline ffi::Any pack(double v) { return ffi::Any(v); }
inline ffi::Any pack(bool v) { return ffi::Any(v); }
template <class... Rs>
ffi::Any pack(const std::tuple<Rs...>& values) {
  ffi::Array<ffi::Any> out;
  std::apply([&](const auto&... v) { (out.push_back(pack(v)), ...); }, values);
  return ffi::Any(out);
}

using Boxed = std::function<void(ffi::PackedArgs, ffi::Any*)>;

template <class R, class... Args, size_t... Is>
void call_unboxed(R (*fn)(Args...), const CallInfo& info, ffi::PackedArgs args, ffi::Any* rv,
                  std::index_sequence<Is...>) {
  if (args.size() != static_cast<int>(sizeof...(Args))) {
    throw Error("the kernel takes " + std::to_string(sizeof...(Args)) + " arguments, got " +
                std::to_string(args.size()));
  }
  // Braced initialisation unpacks the arguments left to right.
  std::tuple<Arg<bare<Args>>...> held{Arg<bare<Args>>(args[Is], Is, info)...};
  if constexpr (std::is_void_v<R>) {
    fn(std::get<Is>(held).get()...);
  } else {
    *rv = pack(fn(std::get<Is>(held).get()...));
  }
}

// The message crosses the C ABI with a marker, so Python can tell a kernel's
// own error from one of the FFI layer.
inline constexpr const char* kErrorMarker = "customop-kernel-error: ";

template <class R, class... Args>
Boxed box(R (*fn)(Args...), CallInfo info) {
  return [fn, info](ffi::PackedArgs args, ffi::Any* rv) {
    try {
      call_unboxed(fn, info, args, rv, std::index_sequence_for<Args...>{});
    } catch (const std::exception& e) {
      throw ffi::Error("RuntimeError", std::string(kErrorMarker) + e.what(), "");
    } catch (...) {
      throw ffi::Error("RuntimeError", std::string(kErrorMarker) + "unknown C++ exception", "");
    }
  };
}

// One record with the strings it points at.
struct Entry {
  int32_t kind, block;
  std::string ns, key, name, schema, inferred;
  int32_t kernel = -1, flags = 0;
  std::string file;
  int32_t line = 0;
};

struct Registry {
  std::vector<Entry> entries;
  std::vector<std::pair<Boxed (*)(const void*, CallInfo), const void*>> boxers;
  std::vector<Boxed> kernels;
  std::vector<customop_record> view;
  customop_registry out{};
  std::string error;
};

// Per shared object (hidden: never merged with another customop library's).
__attribute__((visibility("hidden"))) inline Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace detail

// Options of one impl: `m.impl("add", &add).keep_gil().contiguous();`
class ImplOptions {
 public:
  explicit ImplOptions(size_t entry) : entry_(entry) {}
  // Hold the GIL while the kernel runs (it calls back into Python, or is trivially short).
  ImplOptions& keep_gil() { return set(CUSTOMOP_FLAG_KEEP_GIL); }
  // Reject non-contiguous tensor arguments with a clear error before the kernel runs.
  ImplOptions& contiguous() { return set(CUSTOMOP_FLAG_CONTIGUOUS); }
  // Destination passing: the kernel returns void and takes one trailing TensorView per
  // Tensor the schema returns; customop allocates them from the op's fake impl (shape,
  // dtype, the caller's array type) and passes them in to be written.
  ImplOptions& out_from_fake() { return set(CUSTOMOP_FLAG_OUT_FROM_FAKE); }

 private:
  ImplOptions& set(int32_t flag) {
    detail::registry().entries[entry_].flags |= flag;
    return *this;
  }
  size_t entry_;
};

// The `m` of a block: records defs and impls (torch::Library's def / impl).
class Library {
 public:
  enum Kind { DEF = CUSTOMOP_BLOCK_DEF, FRAGMENT = CUSTOMOP_BLOCK_FRAGMENT, IMPL = CUSTOMOP_BLOCK_IMPL };

  Library(Kind kind, const char* ns, const char* key, const char* file, int line)
      : kind_(kind), ns_(ns), key_(key) {
    add(CUSTOMOP_RECORD_BLOCK, "", "", "", -1, file, line);
  }

  // A def from schema text: "add(Tensor a, Tensor b) -> Tensor".
  Library& def(const char* schema, const char* file = __builtin_FILE(),
               int line = __builtin_LINE()) {
    add(CUSTOMOP_RECORD_DEF, "", schema, "", -1, file, line);
    return *this;
  }

  // A def with its CPU kernel: by name (schema inferred from the C++ type) or
  // by schema text (checked against the C++ type when the library loads).
  template <class R, class... Args>
  ImplOptions def(const char* name_or_schema, R (*fn)(Args...),
                  const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    std::string text(name_or_schema);
    bool named = text.find('(') == std::string::npos;
    return kernel(CUSTOMOP_RECORD_DEF, named ? text : "", named ? "" : text, "CPU", fn, file,
                  line);
  }

  // An impl of an op of this namespace at the block's key (CPU outside IMPL blocks).
  template <class R, class... Args>
  ImplOptions impl(const char* name, R (*fn)(Args...), const char* file = __builtin_FILE(),
                   int line = __builtin_LINE()) {
    std::string key = key_.empty() ? "CPU" : key_;
    return kernel(CUSTOMOP_RECORD_IMPL, name, "", key, fn, file, line);
  }

 private:
  template <class R, class... Args>
  ImplOptions kernel(int32_t kind, const std::string& name, const std::string& schema,
                     const std::string& key, R (*fn)(Args...), const char* file, int line) {
    auto& reg = detail::registry();
    std::string op = name.empty() ? schema.substr(0, schema.find('(')) : name;
    std::string inferred = detail::infer_schema<R, Args...>(op);
    auto boxer = [](const void* f, detail::CallInfo info) {
      return detail::box(reinterpret_cast<R (*)(Args...)>(const_cast<void*>(f)), info);
    };
    int32_t index = static_cast<int32_t>(reg.boxers.size());
    reg.boxers.emplace_back(+boxer, reinterpret_cast<const void*>(fn));
    size_t entry = add(kind, name, schema, inferred, index, file, line, key);
    return ImplOptions(entry);
  }

  size_t add(int32_t kind, const std::string& name, const std::string& schema,
             const std::string& inferred, int32_t kernel, const char* file, int line,
             const std::string& key = "") {
    auto& entries = detail::registry().entries;
    entries.push_back({kind, kind_, ns_, kind == CUSTOMOP_RECORD_BLOCK ? key_ : key, name, schema,
                       inferred, kernel, 0, file, line});
    return entries.size() - 1;
  }

  Kind kind_;
  std::string ns_;
  std::string key_;
};

namespace detail {
// Runs a block during static initialisation, as torch's TorchLibraryInit does.
struct LibraryInit {
  LibraryInit(Library::Kind kind, void (*block)(Library&), const char* ns, const char* key,
              const char* file, int line) {
    try {
      Library lib(kind, ns, key, file, line);
      block(lib);
    } catch (const std::exception& e) {
      auto& error = registry().error;
      if (error.empty()) error = std::string(file) + ":" + std::to_string(line) + ": " + e.what();
    }
  }
};

inline const customop_registry* records() {
  Registry& reg = registry();
  if (reg.view.size() != reg.entries.size()) {
    reg.view.clear();
    for (const Entry& e : reg.entries) {
      reg.view.push_back({e.kind, e.block, e.ns.c_str(), e.key.c_str(), e.name.c_str(),
                          e.schema.c_str(), e.inferred.c_str(), e.kernel, e.flags, e.file.c_str(),
                          e.line});
    }
  }
  reg.out = {CUSTOMOP_ABI_VERSION, static_cast<uint32_t>(reg.view.size()), reg.view.data(),
             reg.error.c_str()};
  return &reg.out;
}

inline ffi::Function kernel_function(int64_t index) {
  Registry& reg = registry();
  if (index < 0 || index >= static_cast<int64_t>(reg.boxers.size())) {
    throw Error("no kernel number " + std::to_string(index));
  }
  int32_t flags = 0;
  for (const Entry& e : reg.entries) {
    if (e.kernel == index) flags = e.flags;
  }
  CallInfo info{true, (flags & CUSTOMOP_FLAG_CONTIGUOUS) != 0};
  auto [boxer, fn] = reg.boxers[index];
  return ffi::Function::FromPacked(boxer(fn, info));
}
}  // namespace detail
}  // namespace customop

// The C entry points (one definition per shared object, whichever TU emits it).
extern "C" __attribute__((visibility("default"), used)) inline const customop_registry*
customop_library_records() {
  return ::customop::detail::records();
}

extern "C" __attribute__((visibility("default"), used)) inline int __tvm_ffi_customop_kernel(
    void*, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  TVM_FFI_SAFE_CALL_BEGIN();
  auto index = reinterpret_cast<const ::tvm::ffi::AnyView*>(args)[0].cast<int64_t>();
  (void)num_args;
  *reinterpret_cast<::tvm::ffi::Any*>(result) = ::customop::detail::kernel_function(index);
  TVM_FFI_SAFE_CALL_END();
}

#define CUSTOMOP_CONCAT_(a, b) a##b
#define CUSTOMOP_CONCAT(a, b) CUSTOMOP_CONCAT_(a, b)

// CUSTOMOP_LIBRARY(ns, m) { m.def(...); }: the one block that defines ns's ops.
#define CUSTOMOP_LIBRARY(ns, m)                                                            \
  static void CUSTOMOP_LIBRARY_init_##ns(::customop::Library&);                            \
  static const ::customop::detail::LibraryInit CUSTOMOP_LIBRARY_static_init_##ns(          \
      ::customop::Library::DEF, &CUSTOMOP_LIBRARY_init_##ns, #ns, "", __FILE__, __LINE__); \
  void CUSTOMOP_LIBRARY_init_##ns(::customop::Library& m)

// CUSTOMOP_LIBRARY_FRAGMENT(ns, m) { m.def(...); }: more defs for ns, any number of blocks.
#define CUSTOMOP_LIBRARY_FRAGMENT(ns, m) CUSTOMOP_LIBRARY_FRAGMENT_(ns, m, __COUNTER__)
#define CUSTOMOP_LIBRARY_FRAGMENT_(ns, m, uid)                                                  \
  static void CUSTOMOP_CONCAT(CUSTOMOP_FRAGMENT_init_##ns##_, uid)(::customop::Library&);       \
  static const ::customop::detail::LibraryInit CUSTOMOP_CONCAT(                                 \
      CUSTOMOP_FRAGMENT_static_init_##ns##_, uid)(                                              \
      ::customop::Library::FRAGMENT, &CUSTOMOP_CONCAT(CUSTOMOP_FRAGMENT_init_##ns##_, uid), #ns, \
      "", __FILE__, __LINE__);                                                                  \
  void CUSTOMOP_CONCAT(CUSTOMOP_FRAGMENT_init_##ns##_, uid)(::customop::Library & m)

// CUSTOMOP_LIBRARY_IMPL(ns, CPU, m) { m.impl("add", &add_cpu); }: kernels for one key.
#define CUSTOMOP_LIBRARY_IMPL(ns, k, m) CUSTOMOP_LIBRARY_IMPL_(ns, k, m, __COUNTER__)
#define CUSTOMOP_LIBRARY_IMPL_(ns, k, m, uid)                                                    \
  static void CUSTOMOP_CONCAT(CUSTOMOP_IMPL_init_##ns##_##k##_, uid)(::customop::Library&);      \
  static const ::customop::detail::LibraryInit CUSTOMOP_CONCAT(                                  \
      CUSTOMOP_IMPL_static_init_##ns##_##k##_, uid)(                                             \
      ::customop::Library::IMPL, &CUSTOMOP_CONCAT(CUSTOMOP_IMPL_init_##ns##_##k##_, uid), #ns,    \
      #k, __FILE__, __LINE__);                                                                   \
  void CUSTOMOP_CONCAT(CUSTOMOP_IMPL_init_##ns##_##k##_, uid)(::customop::Library & m)
