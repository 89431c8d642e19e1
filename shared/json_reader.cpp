#include "shared/json_reader.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace ss {

namespace {

// What a validating reader writes to: nothing.
struct NoValue {
  template <class T>
  NoValue& operator=(T&&) {
    return *this;
  }
};
struct NoText {
  void append(const char*, std::size_t) {}
  void operator+=(char) {}
  void clear() {}
};

// kBuild: the DOM into a json; otherwise the same checks with nothing built (accept_json_fast).
template <bool kBuild>
class Reader {
  using Value = std::conditional_t<kBuild, json, NoValue>;
  using Text = std::conditional_t<kBuild, std::string, NoText>;

 public:
  explicit Reader(std::string_view text)
      : p_(reinterpret_cast<const unsigned char*>(text.data())), end_(p_ + text.size()) {}

  bool document(Value& out) {
    skip_space();
    if (!value(out, 0)) return false;
    skip_space();
    return p_ == end_;  // trailing bytes: nlohmann refuses them too (and says so itself)
  }

 private:
  // nlohmann's whitespace: space, tab, line feed, carriage return (no BOM: left to nlohmann).
  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(const char* word, std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  bool value(Value& out, int depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{':
        return object(out, depth + 1);
      case '[':
        return array(out, depth + 1);
      case '"': {
        Text s;
        if (!string(s)) return false;
        out = std::move(s);
        return true;
      }
      case 't':
        if (!literal("true", 4)) return false;
        out = true;
        return true;
      case 'f':
        if (!literal("false", 5)) return false;
        out = false;
        return true;
      case 'n':
        if (!literal("null", 4)) return false;
        out = nullptr;
        return true;
      default:
        return number(out);
    }
  }

  bool object(Value& out, int depth) {
    if (depth > kFastReaderDepth) return false;
    ++p_;  // '{'
    if constexpr (kBuild) out = json::object();
    skip_space();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    Text key;
    [[maybe_unused]] NoValue skipped;
    for (;;) {
      if (p_ == end_ || *p_ != '"') return false;
      key.clear();
      if (!string(key)) return false;
      skip_space();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      skip_space();
      // A repeated key keeps the last value, as nlohmann's DOM builder does.
      bool read = false;
      if constexpr (kBuild) {
        read = value(out.template get_ref<json::object_t&>()[key], depth);
      } else {
        read = value(skipped, depth);
      }
      if (!read) return false;
      skip_space();
      if (p_ == end_) return false;
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      if (*p_ != ',') return false;
      ++p_;
      skip_space();
    }
  }

  bool array(Value& out, int depth) {
    if (depth > kFastReaderDepth) return false;
    ++p_;  // '['
    if constexpr (kBuild) out = json::array();
    skip_space();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    for (;;) {
      bool read = false;
      if constexpr (kBuild) {
        auto& items = out.template get_ref<json::array_t&>();
        items.emplace_back();
        read = value(items.back(), depth);
      } else {
        NoValue item;
        read = value(item, depth);
      }
      if (!read) return false;
      skip_space();
      if (p_ == end_) return false;
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      if (*p_ != ',') return false;
      ++p_;
      skip_space();
    }
  }

  static int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits after "\u"; -1 when malformed.
  long hex4() {
    static constexpr int kDigits = 4;
    if (end_ - p_ < kDigits) return -1;
    long v = 0;
    for (int i = 0; i < kDigits; ++i) {
      int d = hex_digit(p_[i]);
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    p_ += kDigits;
    return v;
  }

  static void append_utf8(Text& s, std::uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  static bool continuation(unsigned char c) { return c >= 0x80 && c <= 0xBF; }

  // One well-formed UTF-8 sequence of 2–4 bytes at p_ (the ranges nlohmann's lexer accepts);
  // its length, or 0.
  std::size_t utf8_sequence() const {
    const std::size_t left = static_cast<std::size_t>(end_ - p_);
    const unsigned char c = p_[0];
    if (c >= 0xC2 && c <= 0xDF) return left >= 2 && continuation(p_[1]) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
      if (left < 3 || !continuation(p_[2])) return 0;
      unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
      unsigned char hi = c == 0xED ? 0x9F : 0xBF;  // no UTF-16 surrogates
      return p_[1] >= lo && p_[1] <= hi ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
      if (left < 4 || !continuation(p_[2]) || !continuation(p_[3])) return 0;
      unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
      unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
      return p_[1] >= lo && p_[1] <= hi ? 4 : 0;
    }
    return 0;
  }

  bool string(Text& s) {
    ++p_;  // '"'
    for (;;) {
      // The plain run up to the next quote, escape, control or non-ASCII byte, appended at once.
      const unsigned char* run = p_;
      while (p_ != end_ && *p_ != '"' && *p_ != '\\' && *p_ >= 0x20 && *p_ < 0x80) ++p_;
      s.append(reinterpret_cast<const char*>(run), static_cast<std::size_t>(p_ - run));
      if (p_ == end_) return false;
      const unsigned char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < 0x20) return false;  // a raw control character
      if (c >= 0x80) {
        std::size_t n = utf8_sequence();
        if (n == 0) return false;
        s.append(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        continue;
      }
      // An escape.
      if (++p_ == end_) return false;
      const unsigned char e = *p_++;
      switch (e) {
        case '"':
          s += '"';
          break;
        case '\\':
          s += '\\';
          break;
        case '/':
          s += '/';
          break;
        case 'b':
          s += '\b';
          break;
        case 'f':
          s += '\f';
          break;
        case 'n':
          s += '\n';
          break;
        case 'r':
          s += '\r';
          break;
        case 't':
          s += '\t';
          break;
        case 'u': {
          long cp = hex4();
          if (cp < 0) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate alone
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            long lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(s, static_cast<std::uint32_t>(cp));
          break;
        }
        default:
          return false;
      }
    }
  }

  static bool digit(unsigned char c) { return c >= '0' && c <= '9'; }

  // JSON's number grammar; an integer without fraction or exponent is signed when negative and
  // unsigned otherwise, a float beyond 64 bits (nlohmann's types exactly).
  bool number(Value& out) {
    const unsigned char* start = p_;
    bool negative = false;
    if (*p_ == '-') {
      negative = true;
      ++p_;
    }
    if (p_ == end_ || !digit(*p_)) return false;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    const unsigned char* int_end = p_;
    bool is_float = false;
    if (p_ != end_ && *p_ == '.') {
      is_float = true;
      ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      is_float = true;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (!is_float) {
      static constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
      std::uint64_t v = 0;
      bool overflow = false;
      for (const unsigned char* d = negative ? start + 1 : start; d != int_end; ++d) {
        const unsigned digit_value = *d - '0';
        if (v > (kMax - digit_value) / 10) {
          overflow = true;
          break;
        }
        v = v * 10 + digit_value;
      }
      if (!overflow) {
        if (!negative) {
          out = static_cast<json::number_unsigned_t>(v);
          return true;
        }
        static constexpr std::uint64_t kMinMagnitude =
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1;
        if (v <= kMinMagnitude) {
          out = v == kMinMagnitude ? std::numeric_limits<std::int64_t>::min()
                                   : -static_cast<std::int64_t>(v);
          return true;
        }
      }
      // Beyond 64 bits: nlohmann reads it as a float; so does the code below.
    }
    // strtod needs a terminated copy; numbers longer than this are left to nlohmann.
    static constexpr std::size_t kMaxNumberChars = 64;
    const std::size_t n = static_cast<std::size_t>(p_ - start);
    if (n >= kMaxNumberChars) return false;
    char buf[kMaxNumberChars];
    std::memcpy(buf, start, n);
    buf[n] = '\0';
    char* parsed_end = nullptr;
    const double d = std::strtod(buf, &parsed_end);
    if (parsed_end != buf + n || !std::isfinite(d)) return false;  // nlohmann: "number overflow"
    out = d;
    return true;
  }

  const unsigned char* p_;
  const unsigned char* end_;
};

}  // namespace

bool read_json_fast(std::string_view text, json& out) { return Reader<true>(text).document(out); }

bool accept_json_fast(std::string_view text) {
  NoValue out;
  return Reader<false>(text).document(out);
}

}  // namespace ss
