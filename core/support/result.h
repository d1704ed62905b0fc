#pragma once
/// \file
/// Errors cross the core API as values: Status for operations without a payload, Result<T> otherwise.
/// A message always says what went wrong and where (file, operator, field), in one line, so that the
/// CLI can print it and exit 2 and the GUI can show it in a dialog.

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace partex {

/// An error message: one line, naming the file/operator/field and the reason.
struct Error {
  std::string message;
};

/// Success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e.message)) {}  // NOLINT: implicit by design
  static Status ok() { return {}; }
  bool isOk() const { return !error_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return error_ ? *error_ : kEmpty;
  }

 private:
  std::optional<std::string> error_;
};

/// A value of type T or an Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error e) : v_(std::move(e)) {}      // NOLINT: implicit by design
  bool isOk() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return isOk(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return isOk() ? kEmpty : std::get<Error>(v_).message;
  }
  Status status() const { return isOk() ? Status() : Status(std::get<Error>(v_)); }

 private:
  std::variant<T, Error> v_;
};

/// Builds an Error from pieces: makeError("model.onnx: ", "node ", name, ": cycle").
template <class... Parts>
Error makeError(Parts&&... parts) {
  std::string s;
  ((s += std::forward<Parts>(parts)), ...);
  return Error{std::move(s)};
}

}  // namespace partex
