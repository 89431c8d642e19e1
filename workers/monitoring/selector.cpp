#include "workers/monitoring/selector.h"

#include "shared/text.h"

namespace ss::monitoring {

namespace {

// Name code points (CSS Syntax §4.2): letters, '_', and every non-ASCII code point — the bytes of
// a UTF-8 sequence (the body is UTF-8), as lol-html reads them: `#über` and `.café` are selectors.
constexpr CharClass kIdentStart =
    CharClass().range('a', 'z').range('A', 'Z').chars("_-").range('\x80', '\xff');
constexpr CharClass kIdentChar = CharClass(kIdentStart).range('0', '9');
constexpr CharClass kSpace = CharClass().chars(kCssWhitespace);
constexpr CharClass kLineBreak = CharClass().chars("\n\r\f");

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  std::string parse() {
    skip_space();
    if (done()) return "is empty";
    for (;;) {
      if (std::string e = compound(); !e.empty()) return e;
      bool spaced = skip_space();
      if (done()) return "";
      if (peek() == '>') {
        ++i_;
        skip_space();
        if (done()) return "ends with a combinator";
      } else if (!spaced) {
        return unexpected();
      }
    }
  }

 private:
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return s_[i_]; }
  bool skip_space() {
    std::size_t start = i_;
    while (!done() && kSpace.contains(peek())) ++i_;
    return i_ > start;
  }
  std::string unexpected() const {
    return "has unsupported syntax at '" + std::string(s_.substr(i_, 8)) + "'";
  }
  // A CSS identifier (CSS Syntax §4.3.9): a letter, '_' or a non-ASCII code point first, or '-'
  // followed by one of those or a second '-'. "-1" is a number and a lone "-" a delimiter:
  // lol-html refuses `.-1` or `[a=-]`.
  bool ident() {
    if (done() || !kIdentStart.contains(peek())) return false;
    if (peek() == '-' && (i_ + 1 >= s_.size() || !kIdentStart.contains(s_[i_ + 1]))) return false;
    while (!done() && kIdentChar.contains(peek())) ++i_;
    return true;
  }

  // type? (#id | .class | [attr] | [attr=value])*, at least one part.
  std::string compound() {
    bool any = false;
    if (!done() && peek() == '*') {
      ++i_;
      any = true;
    } else if (ident()) {
      any = true;
    }
    while (!done()) {
      char c = peek();
      if (c == '#' || c == '.') {
        ++i_;
        if (!ident()) return c == '#' ? "has '#' without an id" : "has '.' without a class";
      } else if (c == '[') {
        if (std::string e = attribute(); !e.empty()) return e;
      } else {
        break;
      }
      any = true;
    }
    if (!any) return unexpected();
    return "";
  }

  std::string attribute() {
    ++i_;  // '['
    skip_space();
    if (!ident()) return "has an attribute selector without a name";
    skip_space();
    if (!done() && peek() == '=') {
      ++i_;
      skip_space();
      if (done()) return "has an unterminated attribute selector";
      char q = peek();
      if (q == '"' || q == '\'') {
        ++i_;
        while (!done() && peek() != q) {
          if (peek() == '\\') return "has an escape (not supported)";
          // CSS ends a string at a line break with a parse error (a bad-string token).
          if (kLineBreak.contains(peek())) return "has a line break inside a string";
          ++i_;
        }
        if (done()) return "has an unterminated string";
        ++i_;
      } else if (!ident()) {
        return "has an attribute value that is neither a name nor a quoted string";
      }
      skip_space();
    }
    if (done() || peek() != ']') return unexpected();
    ++i_;
    return "";
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

std::string selector_error(std::string_view selector) {
  if (selector.size() > kMaxSelectorLength) {
    return "is longer than " + std::to_string(kMaxSelectorLength) + " bytes";
  }
  if (!is_utf8(selector)) return "is not UTF-8";
  return Parser(selector).parse();
}

std::string matchable_selector(std::string_view selector) {
  std::string out(selector);
  bool in_name = false;  // inside [ … up to = or ]
  char quote = 0;
  for (char& c : out) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[') {
      in_name = true;
    } else if (c == '=' || c == ']') {
      in_name = false;
    } else if (in_name && c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

}  // namespace ss::monitoring
