#include "shared/form.h"

#include <doctest/doctest.h>

#include <string>

namespace ss {
namespace {

TEST_CASE("form: parse_content_type") {
  auto ct = parse_content_type("multipart/form-data; boundary=----WebKitFormBoundaryx7");
  REQUIRE(ct.has_value());
  CHECK(ct->media_type == "multipart/form-data");
  CHECK(ct->params.at("boundary") == "----WebKitFormBoundaryx7");

  ct = parse_content_type("  Application/JSON ;Charset=\"UTF-8\" ; q=\"a\\\"b\";charset=latin1 ");
  REQUIRE(ct.has_value());
  CHECK(ct->media_type == "application/json");
  CHECK(ct->params.at("charset") == "UTF-8");  // first wins, value case kept
  CHECK(ct->params.at("q") == "a\"b");

  ct = parse_content_type("application/x-www-form-urlencoded");
  REQUIRE(ct.has_value());
  CHECK(ct->params.empty());
  CHECK(parse_content_type("text/plain;").has_value());  // trailing ';' tolerated

  CHECK_FALSE(parse_content_type("").has_value());
  CHECK_FALSE(parse_content_type("text").has_value());
  CHECK_FALSE(parse_content_type("text/").has_value());
  CHECK_FALSE(parse_content_type("/plain").has_value());
  CHECK_FALSE(parse_content_type("text/plain charset=utf-8").has_value());
  CHECK_FALSE(parse_content_type("text/plain; charset").has_value());
  CHECK_FALSE(parse_content_type("text/plain; charset=").has_value());
  CHECK_FALSE(parse_content_type("text/plain; charset=\"utf-8").has_value());
  CHECK_FALSE(parse_content_type("text/plain; =x").has_value());
  CHECK_FALSE(parse_content_type(std::string(kMaxContentTypeLength + 1, 'a')).has_value());
  std::string many = "text/plain";
  for (std::size_t i = 0; i <= kMaxContentTypeParams; ++i) many += "; p" + std::to_string(i) + "=1";
  CHECK_FALSE(parse_content_type(many).has_value());
}

TEST_CASE("form: percent_decode_form") {
  CHECK(percent_decode_form("a+b%20c") == "a b c");
  CHECK(percent_decode_form("%41%6a%2B") == "Aj+");
  CHECK(percent_decode_form("caf%C3%A9") == "caf\xC3\xA9");
  CHECK(percent_decode_form("100%") == "100%");
  CHECK(percent_decode_form("%4") == "%4");
  CHECK(percent_decode_form("%zz%") == "%zz%");
  CHECK(percent_decode_form("%%41") == "%A");
  CHECK(percent_decode_form("%00") == std::string(1, '\0'));
  CHECK(percent_decode_form("") == "");
}

TEST_CASE("form: parse_urlencoded") {
  auto f = parse_urlencoded("name=Ada+Lovelace&email=ada%40example.com&&tag=a&tag=b&flag&=v");
  REQUIRE(f.has_value());
  const FormFields expected = {{"name", "Ada Lovelace"},
                               {"email", "ada@example.com"},
                               {"tag", "a"},
                               {"tag", "b"},
                               {"flag", ""},
                               {"", "v"}};
  CHECK(*f == expected);
  auto empty = parse_urlencoded("");
  REQUIRE(empty.has_value());
  CHECK(empty->empty());
  auto eq = parse_urlencoded("a=b=c");
  REQUIRE(eq.has_value());
  CHECK(eq->at(0).second == "b=c");

  std::string body;
  for (std::size_t i = 0; i < kMaxFormFields; ++i) body += "f" + std::to_string(i) + "=x&";
  CHECK(parse_urlencoded(body).has_value());
  body += "one=more";
  CHECK_FALSE(parse_urlencoded(body).has_value());
}

TEST_CASE("form: parse_multipart accepts text fields") {
  const std::string body =
      "This is a preamble.\r\n"
      "--XyZ\r\n"
      "Content-Disposition: form-data; name=\"name\"\r\n"
      "\r\n"
      "Ada Lovelace\r\n"
      "--XyZ  \r\n"  // transport padding
      "content-disposition: FORM-DATA; name=message\r\n"
      "Content-Type: text/plain; charset=utf-8\r\n"
      "\r\n"
      "line one\r\nline two\r\n-- not a boundary\r\n"
      "--XyZ\r\n"
      "Content-Disposition: form-data; name=\"empty\"\r\n"
      "\r\n"
      "\r\n"
      "--XyZ--\r\n"
      "epilogue ignored";
  std::string why;
  auto f = parse_multipart(body, "XyZ", &why);
  INFO(why);
  REQUIRE(f.has_value());
  REQUIRE(f->size() == 3);
  CHECK(f->at(0) == std::pair<std::string, std::string>{"name", "Ada Lovelace"});
  CHECK(f->at(1).first == "message");
  CHECK(f->at(1).second == "line one\r\nline two\r\n-- not a boundary");
  CHECK(f->at(2) == std::pair<std::string, std::string>{"empty", ""});

  // No preamble, closing boundary without trailing CRLF, browser-style boundary.
  const std::string b = "----WebKitFormBoundary7MA4YWxkTrZu0gW";
  const std::string simple =
      "--" + b + "\r\nContent-Disposition: form-data; name=\"a\\\"q\"\r\n\r\n1\r\n--" + b + "--";
  f = parse_multipart(simple, b);
  REQUIRE(f.has_value());
  REQUIRE(f->size() == 1);
  CHECK(f->at(0).first == "a\"q");
  CHECK(f->at(0).second == "1");

  // Only the closing boundary: no fields.
  f = parse_multipart("--XyZ--\r\n", "XyZ");
  REQUIRE(f.has_value());
  CHECK(f->empty());
}

TEST_CASE("form: parse_multipart rejects file uploads and bad framing") {
  std::string why;
  const std::string file =
      "--XyZ\r\nContent-Disposition: form-data; name=\"cv\"; filename=\"cv.pdf\"\r\n"
      "Content-Type: application/pdf\r\n\r\n%PDF\r\n--XyZ--\r\n";
  CHECK_FALSE(parse_multipart(file, "XyZ", &why).has_value());
  CHECK(why == "file uploads are not accepted");
  // With a list for them, files are named there and their content skipped; text fields stay.
  std::vector<std::string> files;
  const std::string mixed =
      "--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\na@example.com\r\n" +
      file.substr(0, file.size() - 11) + "\r\n--XyZ--\r\n";
  auto kept = parse_multipart(mixed, "XyZ", &why, &files);
  REQUIRE(kept.has_value());
  CHECK(*kept == FormFields{{"email", "a@example.com"}});
  CHECK(files == std::vector<std::string>{"cv"});
  // A file input left empty (filename="", no content) is no file: skipped in either mode.
  const std::string empty_input =
      "--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nb@example.com\r\n"
      "--XyZ\r\nContent-Disposition: form-data; name=\"cv\"; filename=\"\"\r\n"
      "Content-Type: application/octet-stream\r\n\r\n\r\n--XyZ--\r\n";
  auto skipped = parse_multipart(empty_input, "XyZ", &why);
  REQUIRE(skipped.has_value());
  CHECK(*skipped == FormFields{{"email", "b@example.com"}});
  // An empty filename with content, or a named file with no content, is still a file.
  const std::string unnamed_content =
      "--XyZ\r\nContent-Disposition: form-data; name=\"cv\"; filename=\"\"\r\n\r\nx\r\n--XyZ--";
  CHECK_FALSE(parse_multipart(unnamed_content, "XyZ", &why).has_value());
  const std::string named_empty =
      "--XyZ\r\nContent-Disposition: form-data; name=\"cv\"; filename=\"a.txt\"\r\n\r\n\r\n--XyZ--";
  CHECK_FALSE(parse_multipart(named_empty, "XyZ", &why).has_value());
  const std::string file_star =
      "--XyZ\r\nContent-Disposition: form-data; name=cv; filename*=UTF-8''cv.pdf\r\n\r\nx\r\n"
      "--XyZ--";
  CHECK_FALSE(parse_multipart(file_star, "XyZ", &why).has_value());
  CHECK(why == "file uploads are not accepted");

  struct Case {
    std::string body;
    std::string boundary;
    std::string why;
  };
  const std::string cd = "Content-Disposition: form-data; name=\"a\"\r\n";
  const Case cases[] = {
      {"--XyZ\r\n" + cd + "\r\nvalue", "XyZ", "missing closing boundary"},
      {"--XyZ\r\n" + cd + "\r\nvalue\r\n--XyZ", "XyZ", "malformed multipart boundary line"},
      {"--XyZ\r\n" + cd + "\r\nvalue\r\n--XyZextra\r\n", "XyZ",
       "malformed multipart boundary line"},
      {"no boundary here", "XyZ", "missing multipart boundary"},
      {"", "XyZ", "missing multipart boundary"},
      {"--XyZ\r\n" + cd + "\r\n1\r\n--XyZ--", "", "invalid multipart boundary"},
      {"--XyZ\r\n" + cd + "\r\n1\r\n--XyZ--", std::string(kMaxBoundaryLength + 1, 'x'),
       "invalid multipart boundary"},
      {"--X\nY\r\n", "X\nY", "invalid multipart boundary"},
      {"--XyZ\r\n" + cd + "value\r\n--XyZ--", "XyZ", "unterminated part headers"},
      {"--XyZ\r\n\r\nvalue\r\n--XyZ--", "XyZ", "part without Content-Disposition"},
      {"--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--", "XyZ",
       "part without Content-Disposition"},
      {"--XyZ\r\nContent-Disposition: form-data\r\n\r\nv\r\n--XyZ--", "XyZ",
       "part without a field name"},
      {"--XyZ\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nv\r\n--XyZ--", "XyZ",
       "part without a field name"},
      {"--XyZ\r\nContent-Disposition: attachment; name=a\r\n\r\nv\r\n--XyZ--", "XyZ",
       "malformed Content-Disposition in part"},
      {"--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nv\r\n--XyZ--", "XyZ",
       "malformed Content-Disposition in part"},
      {"--XyZ\r\nno colon\r\n\r\nv\r\n--XyZ--", "XyZ", "malformed part header"},
      {"--XyZ\r\n" + cd + " folded\r\n\r\nv\r\n--XyZ--", "XyZ", "malformed part header"},
      {"--XyZ\n" + cd + "\nvalue\n--XyZ--", "XyZ", "malformed multipart boundary line"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    why.clear();
    CHECK_FALSE(parse_multipart(c.body, c.boundary, &why).has_value());
    CHECK(why == c.why);
  }
  CHECK_FALSE(parse_multipart("garbage", "XyZ").has_value());  // why is optional

  std::string headers = "--XyZ\r\n" + cd;
  for (std::size_t i = 0; i < kMaxPartHeaders; ++i) headers += "X-Pad: 1\r\n";
  CHECK_FALSE(parse_multipart(headers + "\r\nv\r\n--XyZ--", "XyZ", &why).has_value());
  CHECK(why == "too many part headers");

  std::string many;
  for (std::size_t i = 0; i <= kMaxFormFields; ++i) many += "--XyZ\r\n" + cd + "\r\nv\r\n";
  CHECK_FALSE(parse_multipart(many + "--XyZ--", "XyZ", &why).has_value());
  CHECK(why == "too many form fields");
}

TEST_CASE("form: parse_query") {
  auto q = parse_query("?page=2&q=red+shoes&q=ignored&empty=&flag&x=%2F#frag=1");
  CHECK(q.size() == 5);
  CHECK(q.at("page") == "2");
  CHECK(q.at("q") == "red shoes");
  CHECK(q.at("empty") == "");
  CHECK(q.at("flag") == "");
  CHECK(q.at("x") == "/");
  CHECK(q.count("frag") == 0);
  CHECK(parse_query("").empty());
  CHECK(parse_query("?").empty());
  CHECK(parse_query("a=1").at("a") == "1");

  std::string many;
  for (std::size_t i = 0; i < kMaxQueryParams + 50; ++i) many += "p" + std::to_string(i) + "=1&";
  CHECK(parse_query(many).size() == kMaxQueryParams);
}

}  // namespace
}  // namespace ss

TEST_CASE("encode_urlencoded round-trips through parse_urlencoded") {
  ss::FormFields in = {
      {"secret", "1x00/AA+="}, {"response", "XXXX.DUMMY.TOKEN.XXXX"}, {"to", "+1 555 é&x"}};
  std::string encoded = ss::encode_urlencoded(in);
  CHECK(encoded.find(' ') == std::string::npos);
  CHECK(encoded.find("%2B1") != std::string::npos);
  auto out = ss::parse_urlencoded(encoded);
  REQUIRE(out.has_value());
  CHECK(*out == in);
}
