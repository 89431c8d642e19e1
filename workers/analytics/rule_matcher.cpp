#include "workers/analytics/rule_matcher.h"

#include "shared/text.h"

#include <algorithm>
#include <map>
#include <queue>
#include <utility>

namespace ss::analytics {

namespace {
constexpr char kPartSeparator = '\x1f';

}  // namespace

std::uint32_t RuleMatcher::child(std::uint32_t node, char c) const {
  if (node == 0) return root_next_[static_cast<unsigned char>(c)];
  const auto& next = nodes_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), c,
                             [](const auto& edge, char key) { return edge.first < key; });
  return (it != next.end() && it->first == c) ? it->second : 0;
}

std::uint32_t RuleMatcher::add_literal(std::string_view text) {
  std::uint32_t node = 0;
  for (char raw : text) {
    char c = ascii_lower(raw);
    std::uint32_t next = child(node, c);
    if (next == 0) {
      next = static_cast<std::uint32_t>(nodes_.size());
      nodes_.emplace_back();
      auto& edges = nodes_[node].next;
      auto it = std::lower_bound(edges.begin(), edges.end(), c,
                                 [](const auto& edge, char key) { return edge.first < key; });
      edges.insert(it, {c, next});
      if (node == 0) root_next_[static_cast<unsigned char>(c)] = next;
    }
    node = next;
  }
  return node;
}

RuleMatcher::RuleMatcher(const std::vector<std::string_view>& rules) {
  nodes_.emplace_back();  // the root
  std::map<std::pair<std::string, Anchor>, std::uint32_t> literal_ids;
  for (std::string_view rule : rules) {
    const auto rule_id = static_cast<std::uint32_t>(rule_parts_.size());
    std::uint32_t parts = 0;
    std::size_t start = 0;
    while (start <= rule.size()) {
      std::size_t end = rule.find(kPartSeparator, start);
      if (end == std::string_view::npos) end = rule.size();
      std::string_view part = rule.substr(start, end - start);
      start = end + 1;
      if (part.size() < 2) continue;  // an anchor and at least one character
      Anchor anchor = part[0] == '^'   ? Anchor::start
                      : part[0] == '$' ? Anchor::end
                                       : Anchor::anywhere;
      std::string text(part.substr(1));
      for (char& c : text) c = ascii_lower(c);
      auto [it, fresh] =
          literal_ids.try_emplace({text, anchor}, static_cast<std::uint32_t>(literals_.size()));
      if (fresh) {
        std::uint32_t node = add_literal(text);
        nodes_[node].literals.push_back(it->second);
        literals_.push_back(Literal{static_cast<std::uint32_t>(text.size()), anchor, {}});
      }
      auto& owners = literals_[it->second].rules;
      if (owners.empty() || owners.back() != rule_id) {
        owners.push_back(rule_id);
        ++parts;
      }
    }
    rule_parts_.push_back(parts);
  }
  // Failure links breadth-first; `output` short-cuts the failure chain to nodes that end literals.
  std::queue<std::uint32_t> pending;
  for (auto [c, next] : nodes_[0].next) {
    nodes_[next].fail = 0;
    pending.push(next);
  }
  while (!pending.empty()) {
    std::uint32_t node = pending.front();
    pending.pop();
    const std::uint32_t fail_output = nodes_[nodes_[node].fail].output;
    nodes_[node].output = nodes_[node].literals.empty() ? fail_output : node;
    for (auto [c, next] : nodes_[node].next) {
      std::uint32_t f = nodes_[node].fail;
      while (f != 0 && child(f, c) == 0) f = nodes_[f].fail;
      std::uint32_t target = child(f, c);
      nodes_[next].fail = target == next ? 0 : target;
      pending.push(next);
    }
  }
  literal_stamp_.assign(literals_.size(), 0);
  rule_stamp_.assign(rule_parts_.size(), 0);
  rule_found_.assign(rule_parts_.size(), 0);
}

int RuleMatcher::match(std::string_view text) const {
  // A new stamp makes every entry of the scratch stale at once; on wrap-around, clear them.
  if (++stamp_ == 0) {
    std::fill(literal_stamp_.begin(), literal_stamp_.end(), 0);
    std::fill(rule_stamp_.begin(), rule_stamp_.end(), 0);
    stamp_ = 1;
  }
  const std::uint32_t stamp = stamp_;
  std::uint32_t state = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = ascii_lower(text[i]);
    while (state != 0 && child(state, c) == 0) state = nodes_[state].fail;
    state = child(state, c);
    for (std::uint32_t o = nodes_[state].output; o != 0; o = nodes_[nodes_[o].fail].output) {
      for (std::uint32_t id : nodes_[o].literals) {
        const Literal& lit = literals_[id];
        if (literal_stamp_[id] == stamp) continue;  // each literal counts once
        if (lit.anchor == Anchor::start && i + 1 != lit.length) continue;
        if (lit.anchor == Anchor::end && i + 1 != text.size()) continue;
        literal_stamp_[id] = stamp;
        for (std::uint32_t rule : lit.rules) {
          if (rule_stamp_[rule] != stamp) {
            rule_stamp_[rule] = stamp;
            rule_found_[rule] = 0;
          }
          if (++rule_found_[rule] == rule_parts_[rule]) return static_cast<int>(rule);
        }
      }
    }
  }
  return -1;
}

}  // namespace ss::analytics
