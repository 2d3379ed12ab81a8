//===- Json.h - A small JSON value, parser and serializer -----------------===//
//
// Used for bundle manifests, model signatures and safetensors headers. No
// exceptions: the parser returns false and an error message that names the
// byte offset of the problem.
//
// Numbers are kept as a double; a number that is integral and fits in int64
// also keeps its exact int64 value (so 9007199254740993 survives a round
// trip). Objects keep their keys in insertion (or file) order.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_JSON_H
#define WEFT_RUNTIME_JSON_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  /// A null value.
  JsonValue() = default;

  static JsonValue null() { return JsonValue(); }
  static JsonValue boolean(bool b);
  /// A number; it is also an integer when `d` is integral and fits in int64.
  static JsonValue number(double d);
  /// An exact integer.
  static JsonValue integer(int64_t i);
  static JsonValue string(std::string s);
  static JsonValue array();
  static JsonValue object();

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  /// A number with an exact int64 value.
  bool isInteger() const { return kind_ == Kind::Number && isInt_; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  /// Accessors; each returns a default (false, 0, "") on the wrong kind.
  bool asBool() const { return kind_ == Kind::Bool && bool_; }
  double asDouble() const { return kind_ == Kind::Number ? num_ : 0.0; }
  int64_t asInt() const { return isInteger() ? int_ : 0; }
  const std::string &asString() const;

  /// Number of array elements or object members; 0 otherwise.
  size_t size() const { return items_.size(); }

  /// Array access. `at` requires i < size().
  const JsonValue &at(size_t i) const { return items_[i]; }
  JsonValue &at(size_t i) { return items_[i]; }
  /// Appends to an array (a null value becomes an empty array first).
  JsonValue &push(JsonValue v);

  /// Object access: the member named `key`, or nullptr.
  const JsonValue *get(std::string_view key) const;
  JsonValue *get(std::string_view key);
  /// Sets member `key`, replacing an existing one in place or appending (a
  /// null value becomes an empty object first). Returns the member.
  JsonValue &set(std::string key, JsonValue v);
  /// Appends member `key` without looking for an existing one (the caller
  /// knows it is new). Returns the member.
  JsonValue &append(std::string key, JsonValue v);
  /// The i-th member of an object, in order.
  const std::string &keyAt(size_t i) const { return keys_[i]; }
  const JsonValue &valueAt(size_t i) const { return items_[i]; }
  JsonValue &valueAt(size_t i) { return items_[i]; }

  /// Serializes: compact (no whitespace) or pretty (2-space indentation,
  /// one member per line). NaN and infinities are written as null.
  std::string dump(bool pretty = false) const;

  /// Structural equality (object member order matters; numbers compare by
  /// exact integer when both are integers, else by double).
  bool operator==(const JsonValue &other) const;
  bool operator!=(const JsonValue &other) const { return !(*this == other); }

private:
  friend class JsonParser;
  void dumpTo(std::string &out, bool pretty, int indent) const;

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool isInt_ = false;
  double num_ = 0.0;
  int64_t int_ = 0;
  std::string str_;
  std::vector<JsonValue> items_;  // array elements or object values
  std::vector<std::string> keys_; // object keys, parallel to items_
};

/// Parses `text` as one JSON value (surrounding whitespace allowed). On error
/// returns false and sets `error` to "byte N: <what is wrong>". Duplicate
/// object keys and nesting deeper than 512 levels are errors.
bool parseJson(std::string_view text, JsonValue &out, std::string &error);

/// Appends `s` as a quoted JSON string to `out`.
void appendJsonString(std::string &out, std::string_view s);

} // namespace weft

#endif // WEFT_RUNTIME_JSON_H
