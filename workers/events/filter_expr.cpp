#include "workers/events/filter_expr.h"

#include "shared/json_util.h"
#include "shared/text.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace ss::events {

namespace {

const json kNullValue = nullptr;
const json kTrueValue = true;
const json kFalseValue = false;

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_ascii_digit(c); }

// Events are parsed without a depth limit, and nlohmann's operator== recurses, so `payload.a ==
// payload.b` on two hostile deep trees could exhaust the stack. Values nested deeper than this
// compare unequal instead.
constexpr std::size_t kMaxEqualityDepth = 64;

// JSON equality: numbers by value (1 == 1.0), everything else by type and content. Counts one unit
// per value compared and the bytes of each string pair compared.
bool json_equal(const json& a, const json& b, WorkMeter& meter, std::size_t depth = 0) {
  meter.add(1);
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    if (depth >= kMaxEqualityDepth) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!json_equal(a[i], b[i], meter, depth + 1)) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    if (depth >= kMaxEqualityDepth) return false;
    // Objects keep their keys sorted, so equal objects walk in step.
    for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {
      meter.add(x.key().size());
      if (x.key() != y.key() || !json_equal(x.value(), y.value(), meter, depth + 1)) return false;
    }
    return true;
  }
  if (a.is_string()) {
    meter.add(
        std::min(a.get_ref<const std::string&>().size(), b.get_ref<const std::string&>().size()));
  }
  return a == b;  // null, boolean, string, binary: flat
}

}  // namespace

bool contains_substring(std::string_view haystack, std::string_view needle) {
  // Knuth-Morris-Pratt: O(haystack + needle) time whatever the input (std::string::find is
  // O(haystack * needle) on inputs like "aaa…ab" in "aaaa…", which a tenant controls).
  if (needle.empty()) return true;
  if (needle.size() > haystack.size()) return false;
  std::vector<std::size_t> border(needle.size(), 0);  // longest proper border of needle[0..i]
  for (std::size_t i = 1, k = 0; i < needle.size(); ++i) {
    while (k > 0 && needle[i] != needle[k]) k = border[k - 1];
    if (needle[i] == needle[k]) ++k;
    border[i] = k;
  }
  for (std::size_t i = 0, k = 0; i < haystack.size(); ++i) {
    while (k > 0 && haystack[i] != needle[k]) k = border[k - 1];
    if (haystack[i] == needle[k]) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

namespace {

bool truthy(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0.0;
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  return true;  // arrays and objects, even empty
}

}  // namespace

// Recursive descent over the raw text; every recursion that can repeat without consuming a bounded
// amount of input (parentheses, `!`, call arguments) goes through enter(), so a hostile `((((…` is
// refused at kMaxFilterDepth instead of overflowing the stack.
class FilterParser {
 public:
  explicit FilterParser(std::string_view text) : text_(text) {}

  Result<FilterExpr> run() {
    FilterExpr expr;
    expr.source_ = std::string(text_);
    skip_ws();
    if (pos_ == text_.size()) return fail_at("expression is empty", 0);
    std::size_t root = 0;
    if (!parse_or(root)) return std::move(error_);
    skip_ws();
    if (pos_ != text_.size()) return fail("expected end of expression");
    expr.nodes_ = std::move(nodes_);
    expr.root_ = root;
    return expr;
  }

 private:
  using Node = FilterExpr::Node;
  using NodeKind = FilterExpr::NodeKind;
  using CompareOp = FilterExpr::CompareOp;

  Error fail_at(std::string_view what, std::size_t offset) {
    error_ = Error{ErrorCode::invalid_request,
                   "filter_expr: " + std::string(what) + " at offset " + std::to_string(offset)};
    return error_;
  }
  Error fail(std::string_view what) { return fail_at(what, pos_); }
  // Parse functions return false after recording the error with one of these.
  bool failed(std::string_view what) {
    fail(what);
    return false;
  }
  bool failed_at(std::string_view what, std::size_t offset) {
    fail_at(what, offset);
    return false;
  }

  void skip_ws() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool consume(std::string_view token) {
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  std::string_view peek_ident() const {
    std::size_t end = pos_;
    if (end < text_.size() && is_ident_start(text_[end])) {
      while (end < text_.size() && is_ident_char(text_[end])) ++end;
    }
    return text_.substr(pos_, end - pos_);
  }

  bool add_node(Node node, std::size_t& out) {
    if (node_count_ >= kMaxFilterNodes) {
      return failed("expression has more than " + std::to_string(kMaxFilterNodes) + " nodes");
    }
    ++node_count_;
    nodes_.push_back(std::move(node));
    out = nodes_.size() - 1;
    return true;
  }
  bool enter() {
    if (depth_ >= kMaxFilterDepth) {
      return failed("nesting deeper than " + std::to_string(kMaxFilterDepth));
    }
    ++depth_;
    return true;
  }
  void leave() { --depth_; }

  // or := and ( "||" and )*   — flattened into one n-ary node so long chains stay shallow.
  bool parse_or(std::size_t& out) {
    std::size_t first = 0;
    if (!parse_and(first)) return false;
    skip_ws();
    if (text_.substr(pos_, 2) != "||") {
      out = first;
      return true;
    }
    Node node;
    node.kind = NodeKind::logical_or;
    node.children.push_back(static_cast<std::uint16_t>(first));
    while (true) {
      skip_ws();
      if (!consume("||")) break;
      std::size_t next = 0;
      if (!parse_and(next)) return false;
      node.children.push_back(static_cast<std::uint16_t>(next));
    }
    return add_node(std::move(node), out);
  }

  bool parse_and(std::size_t& out) {
    std::size_t first = 0;
    if (!parse_cmp(first)) return false;
    skip_ws();
    if (text_.substr(pos_, 2) != "&&") {
      out = first;
      return true;
    }
    Node node;
    node.kind = NodeKind::logical_and;
    node.children.push_back(static_cast<std::uint16_t>(first));
    while (true) {
      skip_ws();
      if (!consume("&&")) break;
      std::size_t next = 0;
      if (!parse_cmp(next)) return false;
      node.children.push_back(static_cast<std::uint16_t>(next));
    }
    return add_node(std::move(node), out);
  }

  // Reads a comparison operator if one is next; `!` alone and `=` alone are not operators.
  bool read_compare_op(CompareOp& op) {
    if (consume("=="))
      op = CompareOp::eq;
    else if (consume("!="))
      op = CompareOp::ne;
    else if (consume("<="))
      op = CompareOp::le;
    else if (consume(">="))
      op = CompareOp::ge;
    else if (consume("<"))
      op = CompareOp::lt;
    else if (consume(">"))
      op = CompareOp::gt;
    else
      return false;
    return true;
  }

  bool parse_cmp(std::size_t& out) {
    std::size_t left = 0;
    if (!parse_unary(left)) return false;
    skip_ws();
    CompareOp op = CompareOp::eq;
    const std::size_t op_offset = pos_;
    if (read_compare_op(op)) {
      std::size_t right = 0;
      if (!parse_unary(right)) return false;
      skip_ws();
      CompareOp ignored = CompareOp::eq;
      const std::size_t second_offset = pos_;
      if (read_compare_op(ignored)) {
        return failed_at("comparisons do not chain; use parentheses", second_offset);
      }
      Node node;
      node.kind = NodeKind::compare;
      node.op = op;
      node.children = {static_cast<std::uint16_t>(left), static_cast<std::uint16_t>(right)};
      return add_node(std::move(node), out);
    }
    if (peek() == '=')
      return failed_at("expected '==' (a single '=' is not an operator)", op_offset);
    if (peek_ident() == "in") {
      pos_ += 2;
      Node node;
      node.kind = NodeKind::in_list;
      node.children = {static_cast<std::uint16_t>(left)};
      if (!parse_array(node.value)) return false;
      return add_node(std::move(node), out);
    }
    out = left;
    return true;
  }

  bool parse_array(json& out) {
    skip_ws();
    if (!consume("[")) return failed("expected '[' after 'in'");
    out = json::array();
    skip_ws();
    if (consume("]")) return true;
    while (true) {
      skip_ws();
      json item;
      if (!parse_literal(item)) return false;
      // Each element costs a node, so a huge list is bounded like any other expression.
      if (node_count_ >= kMaxFilterNodes) {
        return failed("expression has more than " + std::to_string(kMaxFilterNodes) + " nodes");
      }
      ++node_count_;
      out.push_back(std::move(item));
      skip_ws();
      if (consume("]")) return true;
      if (!consume(",")) return failed("expected ',' or ']' in list");
    }
  }

  // A literal inside an `in` list: number, string, true, false or null.
  bool parse_literal(json& out) {
    const char c = peek();
    if (c == '"' || c == '\'') return parse_string(out);
    if (c == '-' || is_ascii_digit(c)) return parse_number(out);
    const std::string_view word = peek_ident();
    if (word == "true" || word == "false" || word == "null") {
      out = word == "true" ? json(true) : word == "false" ? json(false) : json(nullptr);
      pos_ += word.size();
      return true;
    }
    return failed("expected a literal (number, string, true, false or null)");
  }

  bool parse_unary(std::size_t& out) {
    skip_ws();
    if (peek() == '!' && peek(1) != '=') {
      ++pos_;
      if (!enter()) return false;
      std::size_t operand = 0;
      const bool ok = parse_unary(operand);
      leave();
      if (!ok) return false;
      Node node;
      node.kind = NodeKind::logical_not;
      node.children = {static_cast<std::uint16_t>(operand)};
      return add_node(std::move(node), out);
    }
    return parse_primary(out);
  }

  bool parse_primary(std::size_t& out) {
    skip_ws();
    if (at_end()) return failed("expected a value, found end of expression");
    const char c = peek();
    if (c == '(') {
      ++pos_;
      if (!enter()) return false;
      const bool ok = parse_or(out);
      leave();
      if (!ok) return false;
      skip_ws();
      if (!consume(")")) return failed("expected ')'");
      return true;
    }
    if (c == '"' || c == '\'' || c == '-' || is_ascii_digit(c)) {
      Node node;
      node.kind = NodeKind::literal;
      const bool quoted = c == '"' || c == '\'';
      if (!(quoted ? parse_string(node.value) : parse_number(node.value))) return false;
      return add_node(std::move(node), out);
    }
    const std::string_view word = peek_ident();
    // "$.payload.amount" (the input mapper's syntax) is a path like "payload.amount": below.
    if (word.empty() && c != '$') {
      return failed(std::string("unexpected character '") + c + "'");
    }
    if (word == "true" || word == "false" || word == "null") {
      Node node;
      node.kind = NodeKind::literal;
      node.value = word == "true" ? json(true) : word == "false" ? json(false) : json(nullptr);
      pos_ += word.size();
      return add_node(std::move(node), out);
    }
    // A call is an identifier followed (possibly after spaces) by '('.
    std::size_t after = pos_ + word.size();
    while (after < text_.size() && (text_[after] == ' ' || text_[after] == '\t' ||
                                    text_[after] == '\n' || text_[after] == '\r')) {
      ++after;
    }
    if (after < text_.size() && text_[after] == '(') return parse_call(word, after, out);
    if (word == "in") return failed("expected a value before 'in'");
    Node node;
    node.kind = NodeKind::path;
    if (!parse_path(node.path)) return false;
    return add_node(std::move(node), out);
  }

  bool parse_call(std::string_view name, std::size_t paren, std::size_t& out) {
    const std::size_t name_offset = pos_;
    Node node;
    if (name == "exists")
      node.kind = NodeKind::exists;
    else if (name == "startsWith")
      node.kind = NodeKind::starts_with;
    else if (name == "contains")
      node.kind = NodeKind::contains;
    else
      return failed_at("unknown function '" + std::string(name) + "'", name_offset);
    pos_ = paren + 1;
    if (!enter()) return false;
    const bool ok = parse_call_args(node);
    leave();
    if (!ok) return false;
    return add_node(std::move(node), out);
  }

  bool parse_call_args(Node& node) {
    skip_ws();
    if (node.kind == NodeKind::exists) {
      if (!is_ident_start(peek()) && peek() != '$') return failed("exists() takes a path");
      if (!parse_path(node.path)) return false;
    } else {
      for (int i = 0; i < 2; ++i) {
        if (i == 1) {
          skip_ws();
          if (!consume(",")) return failed("expected ','");
        }
        std::size_t arg = 0;
        if (!parse_or(arg)) return false;
        node.children.push_back(static_cast<std::uint16_t>(arg));
      }
    }
    skip_ws();
    if (!consume(")")) return failed("expected ')'");
    return true;
  }

  bool parse_path(std::vector<std::string>& segments) {
    if (peek() == '$') {  // "$." before a path, as in input mappers: the event itself
      if (peek(1) != '.') return failed("expected '.' after '$'");
      pos_ += 2;
    }
    std::string_view first = peek_ident();
    if (first.empty()) return failed("expected a path");
    segments.emplace_back(first);
    pos_ += first.size();
    while (peek() == '.') {
      ++pos_;
      std::size_t end = pos_;
      if (is_ident_start(peek())) {
        while (end < text_.size() && is_ident_char(text_[end])) ++end;
      } else {
        while (end < text_.size() && is_ascii_digit(text_[end])) ++end;
        if (end < text_.size() && is_ident_char(text_[end])) {
          return failed("expected a name or an array index after '.'");
        }
      }
      if (end == pos_) return failed("expected a name or an array index after '.'");
      segments.emplace_back(text_.substr(pos_, end - pos_));
      pos_ = end;
    }
    return true;
  }

  // "…" or '…' (the same escapes in both, plus \' ).
  bool parse_string(json& out) {
    const std::size_t start = pos_;
    const char quote = text_[pos_];
    ++pos_;  // opening quote
    std::string value;
    while (true) {
      if (at_end()) return failed_at("unterminated string", start);
      const char c = text_[pos_];
      if (c == quote) {
        ++pos_;
        break;
      }
      if (c == '\\') {
        const char e = peek(1);
        if (e == '"' || e == '\\' || e == '\'')
          value.push_back(e);
        else if (e == 'n')
          value.push_back('\n');
        else if (e == '\0' && pos_ + 1 >= text_.size())
          return failed_at("unterminated string", start);
        else
          return failed("unsupported escape (only \\\" \\\\ \\n)");
        pos_ += 2;
        continue;
      }
      value.push_back(c);
      ++pos_;
    }
    out = std::move(value);
    return true;
  }

  // JSON number syntax; nlohmann does the conversion so literals compare exactly like event values.
  bool parse_number(json& out) {
    const std::size_t start = pos_;
    std::size_t end = pos_;
    if (end < text_.size() && text_[end] == '-') ++end;
    while (end < text_.size() && is_ascii_digit(text_[end])) ++end;
    if (end < text_.size() && text_[end] == '.') {
      ++end;
      while (end < text_.size() && is_ascii_digit(text_[end])) ++end;
    }
    if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
      ++end;
      if (end < text_.size() && (text_[end] == '+' || text_[end] == '-')) ++end;
      while (end < text_.size() && is_ascii_digit(text_[end])) ++end;
    }
    if (end < text_.size() && is_ident_char(text_[end])) return failed_at("invalid number", start);
    const std::string_view token = text_.substr(start, end - start);
    json value = parse_json_or_discarded(token);
    if (value.is_discarded() || !value.is_number()) return failed_at("invalid number", start);
    out = std::move(value);
    pos_ = end;
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
  std::size_t node_count_ = 0;
  std::vector<Node> nodes_;
  Error error_;
};

Result<FilterExpr> FilterExpr::parse(std::string_view text) {
  if (text.size() > kMaxFilterLength) {
    return Error{ErrorCode::invalid_request, "filter_expr: expression longer than " +
                                                 std::to_string(kMaxFilterLength) + " characters"};
  }
  return FilterParser(text).run();
}

bool FilterExpr::matches(const json& event) const {
  WorkMeter unused;
  return matches(event, unused);
}

bool FilterExpr::matches(const json& event, WorkMeter& meter) const {
  if (nodes_.empty()) return false;
  return eval_bool(root_, event, meter);
}

// The value a path points at, or nullptr when any segment is missing.
const json* FilterExpr::resolve(const Node& node, const json& event, WorkMeter& meter) const {
  meter.add(node.path.size());
  const json* current = &event;
  for (const std::string& segment : node.path) {
    if (current->is_object()) {
      current = find_field(*current, segment);
    } else if (current->is_array() && !segment.empty() && is_ascii_digit(segment[0])) {
      if (segment.size() > 9) return nullptr;  // beyond any array we could hold
      std::size_t index = 0;
      for (char c : segment) index = index * 10 + static_cast<std::size_t>(c - '0');
      if (index >= current->size()) return nullptr;
      current = &(*current)[index];
    } else {
      return nullptr;
    }
    if (current == nullptr) return nullptr;
  }
  return current;
}

const json& FilterExpr::eval_value(std::size_t index, const json& event, WorkMeter& meter) const {
  const Node& node = nodes_[index];
  switch (node.kind) {
    case NodeKind::literal:
      return node.value;
    case NodeKind::path: {
      const json* found = resolve(node, event, meter);
      return found != nullptr ? *found : kNullValue;
    }
    default:
      return eval_bool(index, event, meter) ? kTrueValue : kFalseValue;
  }
}

bool FilterExpr::eval_bool(std::size_t index, const json& event, WorkMeter& meter) const {
  const Node& node = nodes_[index];
  meter.add(1);
  switch (node.kind) {
    case NodeKind::literal:
    case NodeKind::path:
      return truthy(eval_value(index, event, meter));
    case NodeKind::logical_not:
      return !eval_bool(node.children[0], event, meter);
    case NodeKind::logical_and:
      for (std::uint16_t child : node.children) {
        if (!eval_bool(child, event, meter)) return false;
      }
      return true;
    case NodeKind::logical_or:
      for (std::uint16_t child : node.children) {
        if (eval_bool(child, event, meter)) return true;
      }
      return false;
    case NodeKind::compare: {
      const json& a = eval_value(node.children[0], event, meter);
      const json& b = eval_value(node.children[1], event, meter);
      if (node.op == CompareOp::eq) return json_equal(a, b, meter);
      if (node.op == CompareOp::ne) return !json_equal(a, b, meter);
      int order = 0;
      if (a.is_number() && b.is_number()) {
        order = compare_numbers(a, b);
      } else if (a.is_string() && b.is_string()) {
        const auto& as = a.get_ref<const std::string&>();
        const auto& bs = b.get_ref<const std::string&>();
        meter.add(std::min(as.size(), bs.size()));
        const int c = as.compare(bs);
        order = c < 0 ? -1 : (c > 0 ? 1 : 0);
      } else {
        return false;
      }
      switch (node.op) {
        case CompareOp::lt:
          return order < 0;
        case CompareOp::le:
          return order <= 0;
        case CompareOp::gt:
          return order > 0;
        case CompareOp::ge:
          return order >= 0;
        default:
          return false;
      }
    }
    case NodeKind::in_list: {
      const json& a = eval_value(node.children[0], event, meter);
      for (const json& item : node.value) {
        if (json_equal(a, item, meter)) return true;
      }
      return false;
    }
    case NodeKind::exists:
      return resolve(node, event, meter) != nullptr;
    case NodeKind::starts_with: {
      const json& s = eval_value(node.children[0], event, meter);
      const json& prefix = eval_value(node.children[1], event, meter);
      if (!s.is_string() || !prefix.is_string()) return false;
      const auto& sv = s.get_ref<const std::string&>();
      const auto& pv = prefix.get_ref<const std::string&>();
      meter.add(pv.size());
      return sv.size() >= pv.size() && sv.compare(0, pv.size(), pv) == 0;
    }
    case NodeKind::contains: {
      const json& haystack = eval_value(node.children[0], event, meter);
      const json& needle = eval_value(node.children[1], event, meter);
      if (haystack.is_array()) {
        for (const json& item : haystack) {
          if (json_equal(item, needle, meter)) return true;
        }
        return false;
      }
      if (haystack.is_string() && needle.is_string()) {
        // KMP: linear in both, whether or not it finds the needle early.
        meter.add(haystack.get_ref<const std::string&>().size() +
                  needle.get_ref<const std::string&>().size());
        return contains_substring(haystack.get_ref<const std::string&>(),
                                  needle.get_ref<const std::string&>());
      }
      return false;
    }
  }
  return false;
}

}  // namespace ss::events
