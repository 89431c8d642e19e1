// The SiteSwarm pageview tracker, served as GET /script.js by siteswarm-analytics-service.
// scripts/gen-analytics.mjs minifies this file into tracker.gen.cpp (edit here, then regenerate).
//
// What it does: one beacon {"u": page URL, "r": referrer, "w": viewport width} on load and on every
// SPA navigation (history.pushState, popstate; its referrer is the page navigated from). What it
// never does: cookies, localStorage or sessionStorage, canvas/font/plugin probing, or anything else
// that could identify a browser. The beacon goes to "beacon" next to this script's own URL, so a
// site that delegates /_sa/* to the service reports to /_sa/beacon on its own origin (no
// third-party request, no CORS).
((doc, win, nav, hist) => {
  var script = doc.currentScript;
  var endpoint = new URL("beacon", script?.src || location.href).href;
  var last;
  // The page's referrer on load; after an SPA navigation the page navigated from (the site's own
  // host: "(direct)"), as a link between two server-rendered pages would have sent. The landing
  // page's referrer is counted once, not once per page of the visit.
  var from = doc.referrer;
  // What the service reads of a URL, no more: a page's origin and path and its utm_* parameters (the
  // rest of a query may hold an email or a token, and made a long URL's beacon exceed 4 KiB); a
  // referrer's origin and path.
  function trimmed(href, utm) {
    var url;
    var kept = new URLSearchParams();
    try {
      url = new URL(href);
      url.searchParams.forEach((v, k) => {
        if (utm && k.startsWith("utm_")) kept.append(k, v);
      });
      url.search = kept;
      url.hash = "";
      return url.href;
    } catch {
      return "";
    }
  }
  function pageview() {
    // A hash change is not a new page; only path + query count.
    var page = location.origin + location.pathname + location.search;
    if (page === last) return;
    last = page;
    var body = JSON.stringify({ u: trimmed(location.href, 1), r: from && trimmed(from), w: win.innerWidth });
    from = location.href;
    // sendBeacon survives page unload and sends text/plain (no CORS preflight); it returns false
    // when the browser refuses to queue it, and then a keepalive fetch does the same job.
    if (!nav.sendBeacon?.(endpoint, body)) {
      fetch(endpoint, { method: "POST", body: body, keepalive: true, credentials: "omit" }).catch(() => {});
    }
  }
  var push = hist.pushState;
  hist.pushState = (...args) => {
    push.apply(hist, args);
    pageview();
  };
  win.addEventListener("popstate", pageview);
  pageview();
})(document, window, navigator, history);
