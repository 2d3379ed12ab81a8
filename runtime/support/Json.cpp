//===- Json.cpp - A small JSON value, parser and serializer ---------------===//

#include "weft/runtime/Json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

namespace weft {

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

static bool integralInt64(double d, int64_t &out) {
  // 2^63 is exactly representable; every double in [-2^63, 2^63) that is
  // integral converts exactly.
  if (!std::isfinite(d) || d != std::trunc(d) || d < -9223372036854775808.0 ||
      d >= 9223372036854775808.0)
    return false;
  out = static_cast<int64_t>(d);
  return true;
}

JsonValue JsonValue::boolean(bool b) {
  JsonValue v;
  v.kind_ = Kind::Bool;
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::number(double d) {
  JsonValue v;
  v.kind_ = Kind::Number;
  v.num_ = d;
  v.isInt_ = integralInt64(d, v.int_);
  return v;
}

JsonValue JsonValue::integer(int64_t i) {
  JsonValue v;
  v.kind_ = Kind::Number;
  v.num_ = static_cast<double>(i);
  v.int_ = i;
  v.isInt_ = true;
  return v;
}

JsonValue JsonValue::string(std::string s) {
  JsonValue v;
  v.kind_ = Kind::String;
  v.str_ = std::move(s);
  return v;
}

JsonValue JsonValue::array() {
  JsonValue v;
  v.kind_ = Kind::Array;
  return v;
}

JsonValue JsonValue::object() {
  JsonValue v;
  v.kind_ = Kind::Object;
  return v;
}

const std::string &JsonValue::asString() const {
  static const std::string empty;
  return kind_ == Kind::String ? str_ : empty;
}

JsonValue &JsonValue::push(JsonValue v) {
  if (kind_ == Kind::Null)
    kind_ = Kind::Array;
  items_.push_back(std::move(v));
  return items_.back();
}

const JsonValue *JsonValue::get(std::string_view key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key)
      return &items_[i];
  return nullptr;
}

JsonValue *JsonValue::get(std::string_view key) {
  return const_cast<JsonValue *>(
      static_cast<const JsonValue *>(this)->get(key));
}

JsonValue &JsonValue::set(std::string key, JsonValue v) {
  if (kind_ == Kind::Null)
    kind_ = Kind::Object;
  if (JsonValue *existing = get(key)) {
    *existing = std::move(v);
    return *existing;
  }
  keys_.push_back(std::move(key));
  items_.push_back(std::move(v));
  return items_.back();
}

JsonValue &JsonValue::append(std::string key, JsonValue v) {
  if (kind_ == Kind::Null)
    kind_ = Kind::Object;
  keys_.push_back(std::move(key));
  items_.push_back(std::move(v));
  return items_.back();
}

bool JsonValue::operator==(const JsonValue &other) const {
  if (kind_ != other.kind_)
    return false;
  switch (kind_) {
  case Kind::Null:
    return true;
  case Kind::Bool:
    return bool_ == other.bool_;
  case Kind::Number:
    if (isInt_ && other.isInt_)
      return int_ == other.int_;
    return num_ == other.num_;
  case Kind::String:
    return str_ == other.str_;
  case Kind::Array:
  case Kind::Object:
    return keys_ == other.keys_ && items_ == other.items_;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Serializer
//===----------------------------------------------------------------------===//

void appendJsonString(std::string &out, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (u < 0x20) {
        out += "\\u00";
        out.push_back(hex[u >> 4]);
        out.push_back(hex[u & 15]);
      } else {
        out.push_back(c);
      }
    }
  }
  out.push_back('"');
}

static void appendDouble(std::string &out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  // The shortest of %.15g, %.16g, %.17g that reads back exactly.
  char buf[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  out += buf;
}

static void appendIndent(std::string &out, int indent) {
  out.push_back('\n');
  out.append(static_cast<size_t>(indent) * 2, ' ');
}

void JsonValue::dumpTo(std::string &out, bool pretty, int indent) const {
  switch (kind_) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Bool:
    out += bool_ ? "true" : "false";
    return;
  case Kind::Number:
    if (isInt_)
      out += std::to_string(int_);
    else
      appendDouble(out, num_);
    return;
  case Kind::String:
    appendJsonString(out, str_);
    return;
  case Kind::Array: {
    if (items_.empty()) {
      out += "[]";
      return;
    }
    // Arrays of scalars (shapes, offsets) stay on one line when pretty.
    bool flat = true;
    for (const JsonValue &item : items_)
      if (item.isArray() || item.isObject())
        flat = false;
    out.push_back('[');
    for (size_t i = 0; i < items_.size(); ++i) {
      if (i)
        out += (pretty && flat) ? ", " : ",";
      if (pretty && !flat)
        appendIndent(out, indent + 1);
      items_[i].dumpTo(out, pretty, indent + 1);
    }
    if (pretty && !flat)
      appendIndent(out, indent);
    out.push_back(']');
    return;
  }
  case Kind::Object:
    if (items_.empty()) {
      out += "{}";
      return;
    }
    out.push_back('{');
    for (size_t i = 0; i < items_.size(); ++i) {
      if (i)
        out.push_back(',');
      if (pretty)
        appendIndent(out, indent + 1);
      appendJsonString(out, keys_[i]);
      out += pretty ? ": " : ":";
      items_[i].dumpTo(out, pretty, indent + 1);
    }
    if (pretty)
      appendIndent(out, indent);
    out.push_back('}');
    return;
  }
}

std::string JsonValue::dump(bool pretty) const {
  std::string out;
  dumpTo(out, pretty, 0);
  return out;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

class JsonParser {
public:
  JsonParser(std::string_view text, std::string &error)
      : text_(text), error_(error) {}

  bool parseDocument(JsonValue &out) {
    skipSpace();
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected trailing characters after the JSON value");
    return true;
  }

private:
  static constexpr int kMaxDepth = 512;

  bool fail(const std::string &what) { return failAt(pos_, what); }
  bool failAt(size_t pos, const std::string &what) {
    error_ = "byte " + std::to_string(pos) + ": " + what;
    return false;
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }

  void skipSpace() {
    while (!atEnd()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
        break;
      ++pos_;
    }
  }

  static std::string describe(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f)
      return std::string("'") + c + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", u);
    return buf;
  }

  bool parseValue(JsonValue &out, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth) +
                  " levels");
    if (atEnd())
      return fail("unexpected end of input, expected a value");
    char c = peek();
    switch (c) {
    case '{':
      return parseObject(out, depth);
    case '[':
      return parseArray(out, depth);
    case '"':
      out = JsonValue();
      out.kind_ = JsonValue::Kind::String;
      return parseString(out.str_);
    case 't':
      return parseLiteral("true", JsonValue::boolean(true), out);
    case 'f':
      return parseLiteral("false", JsonValue::boolean(false), out);
    case 'n':
      return parseLiteral("null", JsonValue(), out);
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(out);
      return fail("unexpected " + describe(c) + ", expected a value");
    }
  }

  bool parseLiteral(std::string_view word, JsonValue value, JsonValue &out) {
    if (text_.substr(pos_, word.size()) != word)
      return fail("invalid literal, expected '" + std::string(word) + "'");
    pos_ += word.size();
    out = std::move(value);
    return true;
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  bool parseNumber(JsonValue &out) {
    size_t start = pos_;
    bool integral = true;
    if (peek() == '-')
      ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (isDigit(peek()))
        return fail("leading zeros are not allowed in numbers");
    } else if (isDigit(peek())) {
      while (isDigit(peek()))
        ++pos_;
    } else {
      return fail("expected a digit");
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!isDigit(peek()))
        return fail("expected a digit after the decimal point");
      while (isDigit(peek()))
        ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (!isDigit(peek()))
        return fail("expected a digit in the exponent");
      while (isDigit(peek()))
        ++pos_;
    }
    std::string literal(text_.substr(start, pos_ - start));
    if (integral) {
      errno = 0;
      char *end = nullptr;
      long long i = std::strtoll(literal.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0') {
        out = JsonValue::integer(static_cast<int64_t>(i));
        return true;
      }
      // Out of int64 range: falls through to a double.
    }
    char *end = nullptr;
    double d = std::strtod(literal.c_str(), &end);
    if (!end || *end != '\0')
      return failAt(start, "invalid number '" + literal + "'");
    if (!std::isfinite(d))
      return failAt(start, "number '" + literal + "' is out of range");
    out = JsonValue::number(d);
    return true;
  }

  bool parseHex4(unsigned &code) {
    if (pos_ + 4 > text_.size())
      return fail("unexpected end of input in a \\u escape");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_ + i];
      unsigned digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return failAt(pos_ + i, "invalid hex digit in a \\u escape");
      code = code * 16 + digit;
    }
    pos_ += 4;
    return true;
  }

  static void appendUtf8(std::string &out, unsigned cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  /// Validates one UTF-8 sequence starting at pos_ (a byte >= 0x80) and
  /// copies it to `out`.
  bool copyUtf8(std::string &out) {
    unsigned char lead = static_cast<unsigned char>(text_[pos_]);
    size_t len;
    unsigned cp, min;
    if (lead >= 0xC2 && lead <= 0xDF) {
      len = 2;
      cp = lead & 0x1F;
      min = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      len = 3;
      cp = lead & 0x0F;
      min = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      len = 4;
      cp = lead & 0x07;
      min = 0x10000;
    } else {
      return fail("invalid UTF-8 in a string");
    }
    if (pos_ + len > text_.size())
      return fail("truncated UTF-8 sequence in a string");
    for (size_t i = 1; i < len; ++i) {
      unsigned char c = static_cast<unsigned char>(text_[pos_ + i]);
      if ((c & 0xC0) != 0x80)
        return fail("invalid UTF-8 in a string");
      cp = (cp << 6) | (c & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return fail("invalid UTF-8 in a string");
    out.append(text_.substr(pos_, len));
    pos_ += len;
    return true;
  }

  bool parseString(std::string &out) {
    size_t start = pos_;
    ++pos_; // opening quote
    out.clear();
    while (true) {
      if (atEnd())
        return failAt(start, "unterminated string");
      char c = text_[pos_];
      unsigned char u = static_cast<unsigned char>(c);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (u < 0x20)
        return fail("unescaped control character in a string");
      if (u >= 0x80) {
        if (!copyUtf8(out))
          return false;
        continue;
      }
      if (c != '\\') {
        out.push_back(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (atEnd())
        return failAt(start, "unterminated string");
      char e = text_[pos_++];
      switch (e) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        size_t escapeStart = pos_ - 2;
        unsigned cp = 0;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return failAt(escapeStart, "unpaired low surrogate in a \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text_.substr(pos_, 2) != "\\u")
            return failAt(escapeStart,
                          "unpaired high surrogate in a \\u escape");
          pos_ += 2;
          unsigned low = 0;
          if (!parseHex4(low))
            return false;
          if (low < 0xDC00 || low > 0xDFFF)
            return failAt(escapeStart,
                          "unpaired high surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return failAt(pos_ - 1, "invalid escape '\\" + std::string(1, e) +
                                    "' in a string");
      }
    }
  }

  bool parseArray(JsonValue &out, int depth) {
    out = JsonValue::array();
    ++pos_; // '['
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      JsonValue item;
      if (!parseValue(item, depth + 1))
        return false;
      out.items_.push_back(std::move(item));
      skipSpace();
      if (atEnd())
        return fail("unexpected end of input, expected ',' or ']'");
      char c = text_[pos_];
      if (c == ']') {
        ++pos_;
        return true;
      }
      if (c != ',')
        return fail("unexpected " + describe(c) + ", expected ',' or ']'");
      ++pos_;
    }
  }

  bool parseObject(JsonValue &out, int depth) {
    out = JsonValue::object();
    std::unordered_set<std::string> seen;
    ++pos_; // '{'
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      if (atEnd())
        return fail("unexpected end of input, expected a member name");
      if (peek() != '"')
        return fail("unexpected " + describe(peek()) +
                    ", expected a member name in double quotes");
      size_t keyPos = pos_;
      std::string key;
      if (!parseString(key))
        return false;
      if (!seen.insert(key).second)
        return failAt(keyPos, "duplicate member name \"" + key + "\"");
      skipSpace();
      if (atEnd())
        return fail("unexpected end of input, expected ':'");
      if (peek() != ':')
        return fail("unexpected " + describe(peek()) +
                    ", expected ':' after a member name");
      ++pos_;
      skipSpace();
      JsonValue value;
      if (!parseValue(value, depth + 1))
        return false;
      out.keys_.push_back(std::move(key));
      out.items_.push_back(std::move(value));
      skipSpace();
      if (atEnd())
        return fail("unexpected end of input, expected ',' or '}'");
      char c = text_[pos_];
      if (c == '}') {
        ++pos_;
        return true;
      }
      if (c != ',')
        return fail("unexpected " + describe(c) + ", expected ',' or '}'");
      ++pos_;
    }
  }

  std::string_view text_;
  std::string &error_;
  size_t pos_ = 0;
};

bool parseJson(std::string_view text, JsonValue &out, std::string &error) {
  JsonParser parser(text, error);
  JsonValue value;
  if (!parser.parseDocument(value))
    return false;
  out = std::move(value);
  return true;
}

} // namespace weft
