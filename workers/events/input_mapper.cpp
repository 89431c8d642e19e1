#include "workers/events/input_mapper.h"

#include "shared/json_util.h"
#include "shared/text.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace ss::events {

namespace {

// Indices beyond this cannot address any event we would accept, and keep the arithmetic far from
// overflow.
constexpr std::size_t kMaxIndexDigits = 9;

bool is_path_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_ascii_digit(c) || c == '_' ||
         c == '-';
}

Error mapper_error(const std::string& key, std::string_view what) {
  // Keys come from the request: quote them through the JSON serialiser so the message stays
  // readable (and valid UTF-8) whatever they contain.
  return Error{ErrorCode::invalid_request,
               "input_mapper: " + dump_json(json(key)) + ": " + std::string(what)};
}

// nlohmann copies recursively, so copying a hostile, deeply nested part of an event could exhaust
// the stack. Such a value maps to null instead. (Ingest should refuse events this deep in the first
// place.)
constexpr std::size_t kMaxCopyDepth = 64;

// About the bytes `value` serialises to: string and key bytes plus a few per value. Values nested
// deeper than kMaxCopyDepth are not copied (they map to null), so the walk stops there too.
std::uint64_t json_weight(const json& value, std::size_t depth = 0) {
  constexpr std::uint64_t kPerValue = 4;  // quotes, separators, a short number or literal
  if (value.is_string()) return kPerValue + value.get_ref<const std::string&>().size();
  if (!value.is_structured()) return kPerValue;
  if (depth >= kMaxCopyDepth) return kPerValue;
  std::uint64_t total = kPerValue;
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      total += kPerValue + it.key().size() + json_weight(it.value(), depth + 1);
    }
  } else {
    for (const json& item : value) total += json_weight(item, depth + 1);
  }
  return total;
}

}  // namespace

Result<InputMapper> InputMapper::parse(const json& mapper) {
  if (!mapper.is_object()) {
    return Error{ErrorCode::invalid_request, "input_mapper: the mapper must be a JSON object"};
  }
  InputMapper result;
  std::size_t key_count = 0;
  Status status = parse_object(mapper, "", 1, key_count, result.fields_);
  if (!status.ok()) return std::move(status).error();
  return result;
}

Status InputMapper::parse_object(const json& mapper, const std::string& prefix, std::size_t depth,
                                 std::size_t& key_count, std::vector<Field>& out) {
  for (auto it = mapper.begin(); it != mapper.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (++key_count > kMaxMapperKeys) {
      return Error{ErrorCode::invalid_request,
                   "input_mapper: more than " + std::to_string(kMaxMapperKeys) + " keys"};
    }
    Field field;
    field.key = it.key();
    const json& value = it.value();
    if (value.is_object()) {
      if (depth >= kMaxMapperDepth) {
        return mapper_error(name, "nested deeper than " + std::to_string(kMaxMapperDepth));
      }
      field.kind = Field::Kind::object;
      Status nested = parse_object(value, name, depth + 1, key_count, field.fields);
      if (!nested.ok()) return nested;
    } else if (value.is_string()) {
      const std::string& path = value.get_ref<const std::string&>();
      if (path.size() > kMaxMapperPathLength) {
        return mapper_error(
            name, "path longer than " + std::to_string(kMaxMapperPathLength) + " characters");
      }
      if (path.empty() || path[0] != '$') {
        return mapper_error(name, "expected a path starting with $");
      }
      field.kind = Field::Kind::path;
      std::size_t pos = 1;
      while (pos < path.size()) {
        Step step;
        if (path[pos] == '.') {
          std::size_t end = pos + 1;
          while (end < path.size() && is_path_name_char(path[end])) ++end;
          if (end == pos + 1) {
            return mapper_error(name,
                                "expected a name after '.' at offset " + std::to_string(pos + 1));
          }
          step.key = path.substr(pos + 1, end - pos - 1);
          pos = end;
        } else if (path[pos] == '[') {
          std::size_t end = pos + 1;
          while (end < path.size() && is_ascii_digit(path[end])) ++end;
          if (end == pos + 1 || end >= path.size() || path[end] != ']') {
            return mapper_error(
                name, "expected an array index like [0] at offset " + std::to_string(pos));
          }
          if (end - pos - 1 > kMaxIndexDigits) {
            return mapper_error(name, "array index too large at offset " + std::to_string(pos));
          }
          step.is_index = true;
          for (std::size_t i = pos + 1; i < end; ++i) {
            step.index = step.index * 10 + static_cast<std::size_t>(path[i] - '0');
          }
          pos = end + 1;
        } else {
          return mapper_error(name, "expected '.' or '[' at offset " + std::to_string(pos));
        }
        field.path.push_back(std::move(step));
      }
    } else {
      // Literals are copied into every input; keep them as shallow as the mapper itself.
      if (!depth_within(value, kMaxMapperDepth - depth)) {
        return mapper_error(name, "nested deeper than " + std::to_string(kMaxMapperDepth));
      }
      field.kind = Field::Kind::literal;
      field.literal = value;
    }
    out.push_back(std::move(field));
  }
  return Unit{};
}

json InputMapper::apply(const json& event) const { return apply_fields(fields_, event); }

std::uint64_t InputMapper::cost(const json& event) const { return cost_fields(fields_, event); }

std::uint64_t InputMapper::cost_fields(const std::vector<Field>& fields, const json& event) {
  std::uint64_t total = 0;
  for (const Field& field : fields) {
    total += field.key.size() + 4;
    switch (field.kind) {
      case Field::Kind::object:
        total += cost_fields(field.fields, event);
        break;
      case Field::Kind::literal:
        total += json_weight(field.literal);
        break;
      case Field::Kind::path: {
        const json* selected = select(field, event);
        total += selected != nullptr ? json_weight(*selected) : 4;
        break;
      }
    }
  }
  return total;
}

// The value a path field points at in the event, or nullptr.
const json* InputMapper::select(const Field& field, const json& event) {
  const json* current = &event;
  for (const Step& step : field.path) {
    if (step.is_index) {
      current =
          current->is_array() && step.index < current->size() ? &(*current)[step.index] : nullptr;
    } else if (current->is_object()) {
      auto it = current->find(step.key);
      current = it != current->end() ? &*it : nullptr;
    } else if (current->is_array() && !step.key.empty() && step.key.size() <= kMaxIndexDigits &&
               std::all_of(step.key.begin(), step.key.end(), is_ascii_digit)) {
      // `.0` on a list is its first item, as a filter_expr path reads it (`payload.items.0`).
      std::size_t index = 0;
      for (char c : step.key) index = index * 10 + static_cast<std::size_t>(c - '0');
      current = index < current->size() ? &(*current)[index] : nullptr;
    } else {
      current = nullptr;
    }
    if (current == nullptr) break;
  }
  return current;
}

json InputMapper::apply_fields(const std::vector<Field>& fields, const json& event) {
  json out = json::object();
  for (const Field& field : fields) {
    switch (field.kind) {
      case Field::Kind::object:
        out[field.key] = apply_fields(field.fields, event);
        break;
      case Field::Kind::literal:
        out[field.key] = field.literal;
        break;
      case Field::Kind::path: {
        const json* current = select(field, event);
        const bool copyable = current != nullptr && depth_within(*current, kMaxCopyDepth);
        out[field.key] = copyable ? *current : json(nullptr);
        break;
      }
    }
  }
  return out;
}

}  // namespace ss::events
