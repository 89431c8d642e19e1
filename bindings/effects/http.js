// Shared by the fetch and service executors: build a Request, read a Response as text.

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * A signal that aborts with a TimeoutError after `ms`, and `clear()` to free its timer as soon as the
 * call is done. (AbortSignal.timeout's timer cannot be cleared: in workerd it would hold one of the
 * invocation's active timeouts for the whole `ms` after every call, and a drain makes thousands.)
 */
export function timeoutSignal(ms) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError")), ms);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/** The effect's request as a Request; `signal` (optional) aborts it. */
export function toRequest({ url, method = "GET", headers = {}, body }, signal) {
  const hasBody = body != null && body !== "" && method !== "GET" && method !== "HEAD";
  return new Request(new URL(url, "https://internal.invalid"), {
    method,
    headers,
    body: hasBody ? body : undefined,
    ...(signal && { signal }),
  });
}

/** Header names are lower-case (the Headers iterator already gives them so). */
export const headersObject = (headers) => Object.fromEntries(headers);

/** Reads at most `limit` bytes of a body stream as UTF-8 text; `tooLarge` when there was more. */
export async function readText(stream, limit = MAX_BODY_BYTES) {
  if (!stream) return { text: "", tooLarge: false };
  const reader = stream.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
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
