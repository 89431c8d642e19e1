#include "shared/form.h"

#include "shared/text.h"

namespace ss {

namespace {

constexpr std::string_view kCrlf = "\r\n";

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

// RFC 9110 tchar.
bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_ows(char c) { return c == ' ' || c == '\t'; }

// A small cursor over one header value.
struct Cursor {
  std::string_view s;
  std::size_t pos = 0;

  bool done() const { return pos >= s.size(); }
  void skip_ows() {
    while (!done() && is_ows(s[pos])) ++pos;
  }
  std::string_view token() {
    const std::size_t start = pos;
    while (!done() && is_token_char(s[pos])) ++pos;
    return s.substr(start, pos - start);
  }
  // quoted-string with backslash escapes; false when unterminated.
  bool quoted(std::string& out) {
    ++pos;  // opening quote
    while (!done()) {
      const char c = s[pos++];
      if (c == '"') return true;
      if (c == '\\') {
        if (done()) return false;
        out += s[pos++];
      } else {
        out += c;
      }
    }
    return false;
  }
};

// Parses `*(OWS ";" OWS name "=" (token / quoted-string))` up to the end of the cursor's input.
// Names are lower-cased; the first occurrence of a name wins. A trailing ';' is tolerated.
bool parse_params(Cursor& in, std::map<std::string, std::string>& params) {
  std::size_t count = 0;
  while (true) {
    in.skip_ows();
    if (in.done()) return true;
    if (in.s[in.pos] != ';') return false;
    ++in.pos;
    in.skip_ows();
    if (in.done()) return true;
    const std::string_view name = in.token();
    if (name.empty() || in.done() || in.s[in.pos] != '=') return false;
    ++in.pos;
    std::string value;
    if (!in.done() && in.s[in.pos] == '"') {
      if (!in.quoted(value)) return false;
    } else {
      value = std::string(in.token());
      if (value.empty()) return false;
    }
    if (++count > kMaxContentTypeParams) return false;
    params.emplace(ascii_lower(name), std::move(value));
  }
}

// Calls visit(name, value) for each non-empty '&'-separated segment, decoded, until it returns
// false.
template <typename Visit>
void for_each_pair(std::string_view s, Visit visit) {
  while (!s.empty()) {
    const std::size_t amp = s.find('&');
    const std::string_view segment = s.substr(0, amp);
    s = amp == std::string_view::npos ? std::string_view() : s.substr(amp + 1);
    if (segment.empty()) continue;
    const std::size_t eq = segment.find('=');
    std::string name = percent_decode_form(segment.substr(0, eq));
    std::string value =
        eq == std::string_view::npos ? std::string() : percent_decode_form(segment.substr(eq + 1));
    if (!visit(std::move(name), std::move(value))) return;
  }
}

// RFC 2046 bchars: DIGIT / ALPHA / "'()+_,-./:=?" and space, which must not be last.
bool is_valid_boundary(std::string_view b) {
  if (b.empty() || b.size() > kMaxBoundaryLength || b.back() == ' ') return false;
  for (char c : b) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::nullopt_t refuse_form(std::string* why, const char* message) {
  if (why != nullptr) *why = message;
  return std::nullopt;
}

struct PartName {
  std::string name;
  bool file = false;            // the part has a filename: a file input's
  bool empty_filename = false;  // filename="": what a browser sends for a file input left empty
};

// The field name from a part's header block (`Content-Disposition: form-data; name="..."`);
// other headers, including a part's Content-Type, are ignored.
std::optional<PartName> part_field_name(std::string_view headers, std::string* why) {
  std::optional<PartName> name;
  std::size_t count = 0;
  while (!headers.empty()) {
    const std::size_t eol = headers.find(kCrlf);
    const std::string_view line = headers.substr(0, eol);
    headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
    if (++count > kMaxPartHeaders) return refuse_form(why, "too many part headers");
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || is_ows(line.front())) {
      return refuse_form(why, "malformed part header");
    }
    if (!iequals(line.substr(0, colon), "content-disposition")) continue;
    if (name.has_value()) continue;  // first Content-Disposition wins

    Cursor in{trim_ows(line.substr(colon + 1))};
    const std::string_view disposition = in.token();
    std::map<std::string, std::string> params;
    if (!iequals(disposition, "form-data") || !parse_params(in, params)) {
      return refuse_form(why, "malformed Content-Disposition in part");
    }
    const auto it = params.find("name");
    if (it == params.end() || it->second.empty())
      return refuse_form(why, "part without a field name");
    name = PartName{it->second};
    const auto filename = params.find("filename");
    name->file = filename != params.end() || params.count("filename*") != 0;
    name->empty_filename =
        filename != params.end() && filename->second.empty() && params.count("filename*") == 0;
  }
  if (!name.has_value()) return refuse_form(why, "part without Content-Disposition");
  return name;
}

}  // namespace

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<ContentType> parse_content_type(std::string_view header) {
  if (header.size() > kMaxContentTypeLength) return std::nullopt;
  Cursor in{trim_ows(header)};
  const std::string_view type = in.token();
  if (type.empty() || in.done() || in.s[in.pos] != '/') return std::nullopt;
  ++in.pos;
  const std::string_view subtype = in.token();
  if (subtype.empty()) return std::nullopt;
  ContentType out;
  out.media_type = ascii_lower(type) + "/" + ascii_lower(subtype);
  if (!parse_params(in, out.params)) return std::nullopt;
  return out;
}

std::string percent_decode_form(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < s.size() && hex_digit_value(s[i + 1]) >= 0 &&
               hex_digit_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit_value(s[i + 1]) * 16 + hex_digit_value(s[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<FormFields> parse_urlencoded(std::string_view body) {
  FormFields fields;
  bool too_many = false;
  for_each_pair(body, [&](std::string name, std::string value) {
    if (fields.size() >= kMaxFormFields) {
      too_many = true;
      return false;
    }
    fields.emplace_back(std::move(name), std::move(value));
    return true;
  });
  if (too_many) return std::nullopt;
  return fields;
}

std::optional<FormFields> parse_multipart(std::string_view body, std::string_view boundary,
                                          std::string* why, std::vector<std::string>* files) {
  if (!is_valid_boundary(boundary)) return refuse_form(why, "invalid multipart boundary");
  const std::string delimiter = "--" + std::string(boundary);
  const std::string next_delimiter = std::string(kCrlf) + delimiter;

  // The first delimiter starts the body or a line after the preamble.
  std::size_t pos = 0;
  if (body.substr(0, delimiter.size()) != delimiter) {
    const std::size_t found = body.find(next_delimiter);
    if (found == std::string_view::npos) return refuse_form(why, "missing multipart boundary");
    pos = found + kCrlf.size();
  }
  pos += delimiter.size();

  FormFields fields;
  while (true) {
    // After a delimiter: "--" closes the body, otherwise optional padding then CRLF.
    if (body.substr(pos, 2) == "--") return fields;
    while (pos < body.size() && is_ows(body[pos])) ++pos;
    if (body.substr(pos, 2) != kCrlf) return refuse_form(why, "malformed multipart boundary line");
    pos += 2;

    std::string_view headers;
    std::size_t content_start = 0;
    if (body.substr(pos, 2) == kCrlf) {
      content_start = pos + 2;
    } else {
      const std::size_t end = body.find("\r\n\r\n", pos);
      if (end == std::string_view::npos) return refuse_form(why, "unterminated part headers");
      headers = body.substr(pos, end - pos);
      content_start = end + 4;
    }
    auto name = part_field_name(headers, why);
    if (!name) return std::nullopt;

    const std::size_t content_end = body.find(next_delimiter, content_start);
    if (content_end == std::string_view::npos) return refuse_form(why, "missing closing boundary");
    pos = content_end + next_delimiter.size();
    // A file input left empty carries no file: it is skipped, as if the form had not sent it.
    if (name->file && name->empty_filename && content_end == content_start) continue;
    if (fields.size() + (files != nullptr ? files->size() : 0) >= kMaxFormFields) {
      return refuse_form(why, "too many form fields");
    }
    if (name->file) {
      if (files == nullptr) return refuse_form(why, "file uploads are not accepted");
      files->push_back(std::move(name->name));
      continue;
    }
    fields.emplace_back(std::move(name->name),
                        std::string(body.substr(content_start, content_end - content_start)));
  }
}

std::map<std::string, std::string> parse_query(std::string_view query) {
  if (!query.empty() && query.front() == '?') query.remove_prefix(1);
  query = query.substr(0, query.find('#'));
  std::map<std::string, std::string> out;
  std::size_t seen = 0;
  for_each_pair(query, [&](std::string name, std::string value) {
    if (seen++ >= kMaxQueryParams) return false;
    out.emplace(std::move(name), std::move(value));
    return true;
  });
  return out;
}

std::string percent_encode_form(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string encode_urlencoded(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty()) out.push_back('&');
    out += percent_encode_form(name);
    out.push_back('=');
    out += percent_encode_form(value);
  }
  return out;
}

}  // namespace ss
