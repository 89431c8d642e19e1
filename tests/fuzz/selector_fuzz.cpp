// Monitor mustContain selectors (workers/monitoring/selector.h): input is the selector.
// The validator must never accept a selector the host's matcher (lol-html, in HTMLRewriter) cannot
// parse: a selector it accepts is also accepted by a reference written from the CSS Syntax
// tokenizer (identifiers as CSS defines them: "-1" is a number, "-" a delimiter; no newline in a
// string) and the grammar of the contract's subset. Refusals carry a reason.
#include "tests/fuzz/fuzz_util.h"
#include "workers/monitoring/selector.h"

#include <string>
#include <vector>

namespace {

// ---- CSS Syntax Level 3 tokens, as far as the subset needs them
enum class Kind { ident, id_hash, string, space, delim, bad };
struct Token {
  Kind kind;
  char delim = 0;
};

bool letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool name_start(unsigned char c) { return letter(c) || c == '_' || c >= 0x80; }
bool name_char(unsigned char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '-'; }
bool css_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
bool css_newline(char c) { return c == '\n' || c == '\r' || c == '\f'; }

// §4.3.9 "check if three code points would start an ident sequence" (escapes: never here).
bool starts_ident(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) -> unsigned char { return k < s.size() ? s[k] : 0; };
  if (at(i) == '-') return name_start(at(i + 1)) || at(i + 1) == '-';
  return name_start(at(i));
}

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (css_space(c)) {
      while (i < s.size() && css_space(s[i])) ++i;
      out.push_back({Kind::space});
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < s.size() && s[i] != c) {
        if (css_newline(s[i]) || s[i] == '\\') return {{Kind::bad}};  // bad-string / escape
        ++i;
      }
      if (i == s.size()) return {{Kind::bad}};  // EOF in a string: a parse error
      ++i;
      out.push_back({Kind::string});
    } else if (c == '#' && starts_ident(s, i + 1)) {
      for (++i; i < s.size() && name_char(static_cast<unsigned char>(s[i]));) ++i;
      out.push_back({Kind::id_hash});
    } else if (starts_ident(s, i)) {
      while (i < s.size() && name_char(static_cast<unsigned char>(s[i]))) ++i;
      out.push_back({Kind::ident});
    } else if (c == '.' || c == '*' || c == '>' || c == '[' || c == ']' || c == '=') {
      ++i;
      out.push_back({Kind::delim, c});
    } else {
      return {{Kind::bad}};  // numbers, other delimiters, escapes: outside the subset
    }
  }
  return out;
}

// ---- the subset's grammar over those tokens
class Grammar {
 public:
  explicit Grammar(std::vector<Token> t) : t_(std::move(t)) {}
  bool selector() {
    spaces();
    if (!compound()) return false;
    for (;;) {
      bool spaced = spaces();
      if (done()) return true;
      if (is_delim('>')) {
        ++i_;
        spaces();
      } else if (!spaced) {
        return false;
      }
      if (!compound()) return false;
    }
  }

 private:
  bool done() const { return i_ >= t_.size(); }
  bool is(Kind k) const { return !done() && t_[i_].kind == k; }
  bool is_delim(char c) const { return is(Kind::delim) && t_[i_].delim == c; }
  bool spaces() {
    bool any = false;
    while (is(Kind::space)) ++i_, any = true;
    return any;
  }
  bool compound() {
    bool any = false;
    if (is(Kind::ident) || is_delim('*')) ++i_, any = true;
    for (;;) {
      if (is(Kind::id_hash)) {
        ++i_;
      } else if (is_delim('.')) {
        ++i_;
        if (!is(Kind::ident)) return false;
        ++i_;
      } else if (is_delim('[')) {
        ++i_;
        spaces();
        if (!is(Kind::ident)) return false;
        ++i_;
        spaces();
        if (is_delim('=')) {
          ++i_;
          spaces();
          if (!is(Kind::ident) && !is(Kind::string)) return false;
          ++i_;
          spaces();
        }
        if (!is_delim(']')) return false;
        ++i_;
      } else {
        return any;
      }
      any = true;
    }
  }

  std::vector<Token> t_;
  std::size_t i_ = 0;
};

bool reference_accepts(std::string_view s) {
  std::vector<Token> tokens = tokenize(s);
  if (!tokens.empty() && tokens[0].kind == Kind::bad) return false;
  return Grammar(std::move(tokens)).selector();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view selector = ss::fuzz::as_text(data, size);
  std::string error = ss::monitoring::selector_error(selector);
  if (error.empty()) {
    ss::fuzz::require(selector.size() <= ss::monitoring::kMaxSelectorLength);
    ss::fuzz::require(reference_accepts(selector));
  }
  return 0;
}
