// Shared by the fetch and service executors: build a Request, read a Response as text.

export const MAX_BODY_BYTES = 1024 * 1024;
// A request body over the limit is still read to its end (and thrown away) up to this size before
// the 413 is answered: a client that sends its whole body before reading the answer (Node's
// fetch, most HTTP libraries) would otherwise have its connection reset under it, and never see
// the 413. Past this, the read stops (the connection may be reset). Cloudflare's edge refuses
// bodies over 100 MB itself.
export const DRAIN_BODY_BYTES = 32 * 1024 * 1024;

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
  const { bytes, tooLarge } = await readBytes(stream, limit);
  return { text: bytes ? lossyDecoder.decode(bytes) : "", tooLarge };
}

/**
 * An outbound call's answer body. With `optional` (the effect's `bodyOptional`: the head is the
 * answer, as a workflow start's 2xx), a body that breaks off or runs out of time reads as empty,
 * `incomplete`, instead of failing the call.
 */
export async function readReplyText(response, optional) {
  try {
    return await readText(response.body);
  } catch (err) {
    if (!optional) throw err;
    await response.body?.cancel().catch(() => {});
    return { text: "", tooLarge: false, incomplete: true };
  }
}

const lossyDecoder = new TextDecoder();
const strictDecoder = new TextDecoder("utf-8", { fatal: true });
const HEX_DIGITS = new TextEncoder().encode("0123456789abcdef");

/**
 * A request's body for its message (docs/abi.md): `{ text }` when its bytes are well-formed UTF-8
 * (a leading BOM dropped, as ever), else `{ hex }` — the bytes as sent, which a JSON string cannot
 * carry: the core sees them and refuses them as its routes refuse malformed text, naming the field
 * where it can, rather than reading U+FFFD where the client sent something else.
 */
export async function readRequestBody(stream, limit = MAX_BODY_BYTES) {
  const { bytes, tooLarge } = await readBytes(stream, limit, DRAIN_BODY_BYTES);
  if (!bytes) return { text: "", tooLarge };
  try {
    return { text: strictDecoder.decode(bytes), tooLarge };
  } catch {
    // Two ASCII digits per byte into one buffer, decoded once (not a string append per byte).
    const digits = new Uint8Array(bytes.length * 2);
    for (let i = 0; i < bytes.length; i++) {
      digits[2 * i] = HEX_DIGITS[bytes[i] >> 4];
      digits[2 * i + 1] = HEX_DIGITS[bytes[i] & 15];
    }
    return { text: "", hex: lossyDecoder.decode(digits), tooLarge };
  }
}

/** The bytes of a `hex` string (readRequestBody's), for handing the request on as it came. */
export function hexBytes(hex) {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.substr(i * 2, 2), 16);
  return out;
}

// At most `limit` bytes of a stream, in one buffer (null when empty or over the limit). A stream
// over the limit is read on to its end and thrown away while it stays within `drainUpTo` bytes.
async function readBytes(stream, limit, drainUpTo = 0) {
  if (!stream) return { bytes: null, tooLarge: false };
  const reader = stream.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      chunks.length = 0;
      while (size <= drainUpTo) {
        const next = await reader.read();
        if (next.done) return { bytes: null, tooLarge: true };
        size += next.value.byteLength;
      }
      await reader.cancel().catch(() => {});
      return { bytes: null, tooLarge: true };
    }
    chunks.push(value);
  }
  if (size === 0) return { bytes: null, tooLarge: false };
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { bytes, tooLarge: false };
}
