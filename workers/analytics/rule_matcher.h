#pragma once
// Matches a text against many literal rules at once, in time linear in the text (Aho-Corasick).
//
// A rule is a set of parts; each part is a lower-case literal that must occur anywhere, at the
// start or at the end of the (lower-cased) text. A rule matches when all its parts occur. This is
// how the crawler list's regular expressions are run on untrusted user agents without a regex
// engine: scripts/gen-analytics.mjs compiles each pattern into such rules.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ss::analytics {

class RuleMatcher {
 public:
  // Each rule: parts joined by '\x1f'; a part is an anchor ('*', '^', '$') and a literal.
  explicit RuleMatcher(const std::vector<std::string_view>& rules);
  // The index of a matching rule, or -1. O(|text| + occurrences of literals in text).
  int match(std::string_view text) const;
  std::size_t rule_count() const { return rule_parts_.size(); }

 private:
  enum class Anchor : std::uint8_t { anywhere, start, end };
  struct Literal {
    std::uint32_t length;
    Anchor anchor;
    std::vector<std::uint32_t> rules;  // rules that contain this part
  };
  struct Node {
    std::vector<std::pair<char, std::uint32_t>> next;  // sorted by char
    std::uint32_t fail = 0;
    std::uint32_t output =
        0;  // nearest node on the fail chain (or itself) ending a literal; 0: none
    std::vector<std::uint32_t> literals;  // literals ending exactly here
  };
  std::uint32_t child(std::uint32_t node, char c) const;
  std::uint32_t add_literal(std::string_view text);

  std::vector<Node> nodes_;
  std::vector<Literal> literals_;
  std::vector<std::uint32_t> rule_parts_;  // number of distinct parts per rule
  // The root's transitions as a table: a scan falls back to the root at most characters of a
  // user agent, where a search of its ~40 edges was most of the matcher's time.
  std::array<std::uint32_t, 256> root_next_{};

  // Per-call scratch, kept between calls so that a match allocates and clears nothing (it was a
  // ~7.5 KB allocation and memset per user agent): an entry counts only when its stamp is the
  // current call's. A worker's instance runs one request's code at a time, so one set suffices.
  mutable std::vector<std::uint32_t> literal_stamp_;  // the call that last saw each literal
  mutable std::vector<std::uint32_t> rule_stamp_;     // the call that last counted each rule
  mutable std::vector<std::uint32_t> rule_found_;     // its parts found in that call
  mutable std::uint32_t stamp_ = 0;
};

}  // namespace ss::analytics
