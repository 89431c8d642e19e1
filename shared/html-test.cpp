#include "shared/html.h"

#include <doctest/doctest.h>

namespace ss {

TEST_CASE("html_escape turns every markup character into an entity and keeps the rest") {
  CHECK(html_escape(R"(<script>alert("x" & 'y')</script>)") ==
        "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;");
  CHECK(html_escape("Crème brûlée — 5 €") == "Crème brûlée — 5 €");
  CHECK(html_escape("") == "");
}

}  // namespace ss
