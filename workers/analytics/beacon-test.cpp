// Beacon parsing and the dimensions of a page view (pure functions).
#include "workers/analytics/beacon.h"

#include "shared/text.h"

#include <doctest/doctest.h>

using namespace ss::analytics;

TEST_CASE("analytics beacon: URL parts") {
  auto p = split_url("HTTPS://User:pw@WWW.Example.COM:8443/a/b?x=1&y=2#frag");
  REQUIRE(p);
  CHECK(p->scheme == "https");
  CHECK(p->host == "www.example.com");
  CHECK(p->path == "/a/b");
  CHECK(p->query == "x=1&y=2");
  CHECK(split_url("https://example.com")->path == "/");
  CHECK(split_url("https://[::1]:8787/x")->host == "[::1]");
  CHECK_FALSE(split_url("/relative"));
  CHECK_FALSE(split_url("https:///nohost"));
}

TEST_CASE("analytics beacon: path without query, utm_* read, other parameters dropped") {
  Beacon b{
      "https://shop.example/p/1?utm_source=News+Letter&utm_medium=e%2Dmail&session=abc"
      "&utm_campaign=x&utm_source=second#t",
      "", std::nullopt};
  auto d = page_dimensions(b, {});
  CHECK(d.path == "/p/1");
  CHECK(d.utm_source == "News Letter");
  CHECK(d.utm_medium == "e-mail");
  CHECK(d.utm_campaign == "x");
  CHECK(d.referrer == std::string(kDirect));
}

TEST_CASE("analytics beacon: a control character or a space in a path is percent-encoded") {
  Beacon b{std::string("https://shop.example/nul\0x/a b\x7f\t/caf\xc3\xa9", 38), "", std::nullopt};
  auto d = page_dimensions(b, {});
  CHECK(d.path == "/nul%00x/a%20b%7F%09/caf\xc3\xa9");  // raw UTF-8 stays as sent (docs)
  Beacon browser{"https://shop.example/nul%00x", "", std::nullopt};
  CHECK(page_dimensions(browser, {}).path == "/nul%00x");  // the same key as a browser's
}

TEST_CASE("analytics beacon: a utm value that does not decode to text is kept as sent") {
  Beacon b{"https://shop.example/?utm_source=%00news&utm_medium=%FF%FE&utm_campaign=caf%C3%A9+x",
           "", std::nullopt};
  auto d = page_dimensions(b, {});
  CHECK(d.utm_source == "%00news");
  CHECK(d.utm_medium == "%FF%FE");
  CHECK(d.utm_campaign == "caf\xc3\xa9 x");  // text decodes as before
  std::string long_raw = std::string(98, 'a') + "%00";
  Beacon cut{"https://shop.example/?utm_source=" + long_raw, "", std::nullopt};
  CHECK(page_dimensions(cut, {}).utm_source == std::string(98, 'a'));  // never through "%00"
}

// Dimensions longer than their limit are cut before a character, never through one: a key cut
// inside a UTF-8 sequence reads back as U+FFFD (and groups apart from the same text cut right).
TEST_CASE("analytics beacon: long dimensions are cut at a character boundary") {
  std::string e_acute_100;  // "é" × 100: 200 bytes
  for (int i = 0; i < 100; ++i) e_acute_100 += "\xc3\xa9";
  std::string path = "/" + e_acute_100 + e_acute_100 + e_acute_100;  // 601 bytes
  std::string campaign = "x";
  for (int i = 0; i < 60; ++i) campaign += "%C3%A9";      // decodes to 121 bytes
  std::string host = std::string(300, 'b') + ".example";  // 308 bytes
  auto d = page_dimensions(Beacon{"https://shop.example" + path + "?utm_campaign=" + campaign,
                                  "https://" + host + "/", std::nullopt},
                           {});
  CHECK(d.path.size() <= kMaxPathLength);
  CHECK(d.path.size() >= kMaxPathLength - 1);
  CHECK(ss::is_utf8(d.path));
  CHECK(d.utm_campaign.size() <= kMaxUtmLength);
  CHECK(d.utm_campaign.size() >= kMaxUtmLength - 1);
  CHECK(ss::is_utf8(d.utm_campaign));
  CHECK(d.referrer.size() == kMaxHostLength);
}

// A path is percent-encoded as a browser sends it: cut before an escape, and before the escapes of a
// character the cut would split ("%E3%81" alone reads back as U+FFFD), never through either.
TEST_CASE(
    "analytics beacon: a percent-encoded path is cut before an escape and a whole character") {
  for (int pad = 0; pad < 9; ++pad) {
    CAPTURE(pad);
    std::string path = "/" + std::string(static_cast<std::size_t>(pad), 'p');
    for (int i = 0; i < 60; ++i) path += "%E3%81%82";  // "あ" × 60
    auto d = page_dimensions(Beacon{"https://shop.example" + path, "", std::nullopt}, {});
    CHECK(d.path.size() <= kMaxPathLength);
    CHECK(d.path.size() > kMaxPathLength - 9);
    // Whole characters only: what is left after the padding is a run of complete "%E3%81%82".
    std::string rest = d.path.substr(1 + static_cast<std::size_t>(pad));
    CHECK(rest.size() % 9 == 0);
    CHECK(rest.rfind("%E3%81%82") == rest.size() - 9);
  }
  // Plain escapes of ASCII are cut as whole escapes too.
  std::string spaces = "/";
  for (int i = 0; i < 200; ++i) spaces += "%20";
  auto d = page_dimensions(Beacon{"https://shop.example" + spaces, "", std::nullopt}, {});
  CHECK(d.path.size() == 511);  // "/" and 170 whole "%20"
  CHECK(d.path.substr(d.path.size() - 3) == "%20");
}

TEST_CASE("analytics beacon: referrer host, own hosts are direct") {
  auto ref = [](const std::string& r, std::vector<std::string> own = {}) {
    return page_dimensions(Beacon{"https://www.shop.example/", r, std::nullopt}, own).referrer;
  };
  CHECK(ref("https://www.google.com/search?q=x") == "google.com");
  CHECK(ref("https://shop.example/other") == std::string(kDirect));  // www. ignored
  CHECK(ref("https://blog.shop.example/", {"Blog.Shop.Example"}) == std::string(kDirect));
  // A trailing dot names the same host (the referrer's, the page's or a configured one).
  CHECK(ref("https://shop.example./other") == std::string(kDirect));
  CHECK(ref("https://www.shop.example./") == std::string(kDirect));
  CHECK(ref("https://blog.shop.example./", {"blog.shop.example"}) == std::string(kDirect));
  CHECK(ref("https://blog.shop.example/", {"blog.shop.example."}) == std::string(kDirect));
  CHECK(page_dimensions(Beacon{"https://shop.example./", "https://shop.example/", std::nullopt}, {})
            .referrer == std::string(kDirect));
  CHECK(ref("") == std::string(kDirect));
  CHECK(ref("not a url") == std::string(kDirect));
  CHECK(ref("android-app://com.google.android.gm/") == "com.google.android.gm");
  CHECK(ref("http://192.0.2.7:8080/") == "192.0.2.7");
  CHECK(ref("http://[2001:DB8::1]/") == "[2001:db8::1]");
  CHECK(ref("https://xn--bcher-kva.example/") == "xn--bcher-kva.example");
  // What no browser sends as a referrer's host is unparseable: direct, never a dimension key.
  for (const char* bad :
       {"https://evil<svg>.example/", "https://a%20b.example/", "https://a b.example/",
        "https://b\xc3\xbc"
        "cher.example/",
        "http://[::1<x>]/", "http://[]/", "http://[[::1]/", "https://a\"b.example/"}) {
    CHECK_MESSAGE(ref(bad) == std::string(kDirect), bad);
  }
}

TEST_CASE("analytics beacon: body validation") {
  CHECK(parse_beacon(R"({"u":"https://a.example/","r":"","w":1280.5})")->width == 1280);
  CHECK(parse_beacon(R"({"u":"http://a.example/","r":null,"w":null})"));
  CHECK(parse_beacon(R"({"u":"https://a.example/","tenant":"other"})"));
  CHECK(parse_beacon("").error().status() == 400);
  CHECK(parse_beacon(R"({"u":"ftp://a.example/"})").error().extra["field"] == "u");
  CHECK(parse_beacon(R"({"u":"https://a.example/","w":1e9})").error().extra["field"] == "w");
  CHECK(parse_beacon(R"({"u":"https://a.example/","r":[]})").error().extra["field"] == "r");
}

TEST_CASE("analytics: a config.hosts entry names its host, also as a URL or host:port") {
  using ss::analytics::site_host;
  CHECK(site_host("shop.example") == "shop.example");
  CHECK(site_host("Shop.Example") == "Shop.Example");  // compared in lower case
  CHECK(site_host("https://Shop.Example:8443/menu?x") == "shop.example");
  CHECK(site_host("localhost:8787") == "localhost");
  CHECK(site_host("127.1:80") == "127.0.0.1");
  CHECK(site_host("[0:0:0:0:0:0:0:1]") == "[::1]");
}
