// customop/schema.h: a schema from a C++ function type, as torch's
// inferFunctionSchemaFromFunctor does (c10/op_registration/infer_schema.h).
//
// The types are read at compile time; the text is composed when the library's
// blocks run (static initialisation). Arguments and returns are named _0, _1,
// ... as torch names them, so `add(Tensor _0, Tensor _1) -> Tensor _0` is what
// torch prints for the same function.
#pragma once

#include <customop/tensor.h>

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace customop {
namespace detail {

template <class T>
struct always_false : std::false_type {};

// The schema type of one C++ parameter type (after removing const and &).
template <class T>
struct schema_type {
  static_assert(always_false<T>::value,
                "customop: this C++ parameter type has no schema type. Use TensorView, "
                "std::optional<TensorView>, Span<TensorView>, int64_t, double, bool, "
                "std::string_view, Span<int64_t>, ScalarType, Device or std::optional of these.");
};
template <> struct schema_type<TensorView> { static constexpr const char* text = "Tensor"; };
template <> struct schema_type<Tensor> { static constexpr const char* text = "Tensor"; };
template <> struct schema_type<Span<TensorView>> { static constexpr const char* text = "Tensor[]"; };
template <> struct schema_type<int64_t> { static constexpr const char* text = "int"; };
template <> struct schema_type<double> { static constexpr const char* text = "float"; };
template <> struct schema_type<bool> { static constexpr const char* text = "bool"; };
template <> struct schema_type<std::string_view> { static constexpr const char* text = "str"; };
template <> struct schema_type<Span<int64_t>> { static constexpr const char* text = "int[]"; };
template <> struct schema_type<ScalarType> { static constexpr const char* text = "ScalarType"; };
template <> struct schema_type<Device> { static constexpr const char* text = "Device"; };

template <class T>
using bare = std::remove_cv_t<std::remove_reference_t<T>>;

template <class T>
struct optional_of {
  static std::string text() { return schema_type<T>::text; }
};
template <class T>
struct optional_of<std::optional<T>> {
  static std::string text() { return std::string(schema_type<T>::text) + "?"; }
};

// "Tensor", "int[]", "float?", ...: a function, so no static-initialisation order matters.
template <class T>
std::string type_text() {
  return optional_of<bare<T>>::text();
}

// What a kernel may return: new tensors (customop::Tensor), scalars, tuples of them.
template <class R>
struct return_types {
  static std::string text(size_t first) {
    static_assert(!std::is_same_v<bare<R>, TensorView>,
                  "customop: a kernel cannot return a TensorView (a view of an argument); "
                  "return a customop::Tensor made with customop::empty / empty_like, or "
                  "declare the argument mutated (Tensor(a!)) and return void.");
    return type_text<R>() + " _" + std::to_string(first);
  }
  static constexpr size_t count = 1;
};
template <>
struct return_types<void> {
  static std::string text(size_t) { return ""; }
  static constexpr size_t count = 0;
};
template <class... Rs>
struct return_types<std::tuple<Rs...>> {
  static std::string text(size_t) {
    std::string out;
    size_t i = 0;
    ((out += (i ? ", " : "") + return_types<Rs>::text(i), ++i), ...);
    return out;
  }
  static constexpr size_t count = sizeof...(Rs);
};

template <class F>
struct function_traits;
template <class R, class... Args>
struct function_traits<R (*)(Args...)> {
  using result = R;
  using args = std::tuple<Args...>;
  static constexpr size_t arity = sizeof...(Args);
};

// "name(Tensor _0, int _1) -> Tensor _0" for a kernel R(Args...).
template <class R, class... Args>
std::string infer_schema(std::string_view name) {
  std::string out(name);
  out += "(";
  size_t i = 0;
  ((out += (i ? ", " : "") + type_text<Args>() + " _" + std::to_string(i), ++i), ...);
  out += ") -> ";
  std::string returns = return_types<bare<R>>::text(0);
  constexpr size_t n = return_types<bare<R>>::count;
  out += n == 1 ? returns : "(" + returns + ")";
  return out;
}

}  // namespace detail
}  // namespace customop
