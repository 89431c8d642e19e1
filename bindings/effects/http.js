// Shared by the fetch and service executors: build a Request, read a Response as text.

export const MAX_BODY_BYTES = 1024 * 1024;

export function toRequest({ url, method = "GET", headers = {}, body }) {
  const hasBody = body != null && body !== "" && method !== "GET" && method !== "HEAD";
  return new Request(new URL(url, "https://internal.invalid"), {
    method,
    headers,
    body: hasBody ? body : undefined,
  });
}

/** Header names are lower-case (the Headers iterator already gives them so). */
export const headersObject = (headers) => Object.fromEntries(headers);

/**
 * Reads at most `limit` bytes of a body stream as UTF-8 text; `tooLarge` when there was more.
 * `declared` (a request's Content-Length, when it has one and no Content-Encoding): once exactly that
 * many bytes have come, the body is complete by HTTP's framing, and the read that would only say
 * "done" (~10 µs of workerd CPU per request, docs/performance.md) is not made; whatever a stream that
 * lied about its length holds beyond it is left unread. A stream that gives more than declared in the
 * same chunk is read on as without a declared length (up to `limit`).
 */
export async function readText(stream, limit = MAX_BODY_BYTES, declared = Number.NaN) {
  if (!stream) return { text: "", tooLarge: false };
  const reader = stream.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    if (size === declared) {
      reader.releaseLock();
      break;
    }
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return { text: "", tooLarge: true };
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { text: new TextDecoder().decode(bytes), tooLarge: false };
}
