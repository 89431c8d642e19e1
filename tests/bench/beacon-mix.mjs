// The beacon the analytics benches send (analytics-peer.mjs, beacon-cpu.mjs): the n-th of a mix of a
// desktop Chrome and, one in ten, a crawler, from a spread of client IPs, to one of 50 pages.
export const CHROME =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
export const CRAWLER = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/** The fetch init of beacon number `n` for `tenant` with its tenant `token`. */
export const beaconInit = (n, tenant, token) => ({
  method: "POST",
  headers: {
    "content-type": "text/plain;charset=UTF-8",
    "x-siteswarm-tenant-id": tenant,
    "x-siteswarm-tenant-token": token,
    "user-agent": n % 10 === 9 ? CRAWLER : CHROME,
    "cf-connecting-ip": `198.51.${(n >> 8) & 255}.${n & 255}`,
  },
  body: JSON.stringify({
    u: `https://crumbandcrust.example/p/${n % 50}?utm_source=news&id=${n}`,
    r: "https://www.google.com/",
    w: 1280,
  }),
});
