// The local Turnstile widget, served by the stubs as GET /turnstile/v0/api.js in place of
// https://challenges.cloudflare.com/turnstile/v0/api.js (unreachable offline). It keeps Cloudflare's
// test-sitekey semantics (developers.cloudflare.com/turnstile/troubleshooting/testing): the passing
// keys hand out the dummy token XXXX.DUMMY.TOKEN.XXXX (which the siteverify stub accepts with the
// test secret 1x0000000000000000000000000000000AA), the blocking keys never produce a token, and the
// interactive key asks for a click first. Any other sitekey is refused like the real widget does.
// Implicit rendering of `.cf-turnstile` elements, `data-callback`/`data-error-callback`, and the
// `turnstile.render/getResponse/reset/remove` API; the token goes into a hidden
// `cf-turnstile-response` input of the form, as with the real widget.
export const TURNSTILE_WIDGET = `(() => {
  "use strict";
  const TOKEN = "XXXX.DUMMY.TOKEN.XXXX";
  const KEYS = {
    "1x00000000000000000000AA": { mode: "pass", visible: true },
    "2x00000000000000000000AB": { mode: "block", visible: true },
    "1x00000000000000000000BB": { mode: "pass", visible: false },
    "2x00000000000000000000BB": { mode: "block", visible: false },
    "3x00000000000000000000FF": { mode: "interactive", visible: true },
  };
  const widgets = new Map();
  let next = 0;

  function call(name, fn, ...args) {
    const f = typeof fn === "function" ? fn : typeof window[name] === "function" ? window[name] : null;
    if (f) f(...args);
  }

  function render(target, options = {}) {
    const el = typeof target === "string" ? document.querySelector(target) : target;
    if (!el) throw new Error("turnstile: no element to render into");
    const data = el.dataset;
    const sitekey = options.sitekey ?? data.sitekey;
    const key = KEYS[sitekey] ?? { mode: "invalid", visible: true };
    const id = "ts-local-" + next++;
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = options["response-field-name"] ?? data.responseFieldName ?? "cf-turnstile-response";
    const box = document.createElement("div");
    box.id = id;
    box.setAttribute("role", "status");
    box.style.cssText = "display:inline-flex;align-items:center;gap:.5rem;padding:.6rem .8rem;border:1px solid #767676;border-radius:.3rem;background:#fafafa;color:#1a1a1a;font:15px/1.3 system-ui,sans-serif";
    const w = { el, box, input, key, token: "", options, data };
    widgets.set(id, w);
    el.replaceChildren(box, input);
    if (!key.visible) box.style.display = "none";
    start(w);
    return id;
  }

  function solved(w) {
    w.token = TOKEN;
    w.input.value = TOKEN;
    w.box.textContent = "\\u2713 Verified (local test widget)";
    call(w.data.callback, w.options.callback, TOKEN);
  }

  function start(w) {
    w.token = "";
    w.input.value = "";
    if (w.key.mode === "pass") return solved(w);
    if (w.key.mode === "interactive") {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.addEventListener("change", () => box.checked && solved(w));
      label.append(box, " Verify you are human (local test widget)");
      w.box.replaceChildren(label);
      return;
    }
    w.box.textContent =
      w.key.mode === "block" ? "Verification failed (local test widget)" : "Invalid sitekey (local test widget)";
    call(w.data.errorCallback, w.options["error-callback"], w.key.mode === "block" ? "600010" : "110100");
  }

  const find = (id) => widgets.get(id) ?? widgets.values().next().value;
  window.turnstile = {
    render,
    getResponse: (id) => find(id)?.token ?? "",
    reset: (id) => {
      const w = find(id);
      if (w) start(w);
    },
    remove: (id) => {
      const w = find(id);
      if (!w) return;
      w.el.replaceChildren();
      widgets.delete(w.box.id);
    },
    isExpired: () => false,
  };

  const script = document.currentScript;
  const params = new URL(script ? script.src : location.href).searchParams;
  const boot = () => {
    if (params.get("render") !== "explicit") {
      for (const el of document.querySelectorAll(".cf-turnstile")) render(el);
    }
    const onload = params.get("onload");
    if (onload && typeof window[onload] === "function") window[onload]();
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
`;
