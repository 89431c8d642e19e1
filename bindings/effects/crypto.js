// WebCrypto for the core: SHA-256, HMAC-SHA256 and random bytes, always hex out.

const MAX_RANDOM_BYTES = 65536; // getRandomValues' own limit
const encoder = new TextEncoder();
const utf8 = (text) => encoder.encode(String(text ?? ""));
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));
const hex = (buffer) => {
  let out = "";
  for (const b of new Uint8Array(buffer)) out += HEX[b];
  return out;
};

export default {
  async "crypto.sha256"(effect) {
    return { hex: hex(await crypto.subtle.digest("SHA-256", utf8(effect.data))) };
  },
  async "crypto.hmac_sha256"(effect) {
    const key = await crypto.subtle.importKey("raw", utf8(effect.key), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
    ]);
    return { hex: hex(await crypto.subtle.sign("HMAC", key, utf8(effect.data))) };
  },
  async "crypto.random"(effect) {
    const size = Math.min(Math.max(0, effect.bytes | 0), MAX_RANDOM_BYTES);
    return { hex: hex(crypto.getRandomValues(new Uint8Array(size))) };
  },
};
