// The baseline for scripts/bench: a plain-JS worker answering /health like the platform workers do.
export default {
  fetch() {
    return Response.json({ ok: true, service: "hello", version: "0.1.0" });
  },
};
