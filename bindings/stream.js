// Streamed responses (docs/abi.md "Streamed responses"): the core sends `response.open` with the
// status and headers, then `response.write` chunks. The fetch handler answers the client as soon as
// the stream opens; each write completes only once the client has taken the previous chunk, so
// neither the core nor the host holds more than about one chunk whatever the body's size.
// `response.send` (docs/abi.md "Answering early") answers the client with a whole response while the
// run goes on with its background work, under ctx.waitUntil.
import { EffectError } from "./effects/errors.js";
import { toResponse } from "./messages.js";

const encoder = new TextEncoder();

export class ResponseStream {
  #controller = null;
  #sent = false;
  #cancelled = false;
  #wake = null; // resolves the write waiting for the client to pull
  #resolveOpened;

  /** Resolves with the Response once the core opens the stream (never, if it does not). */
  opened = new Promise((resolve) => {
    this.#resolveOpened = resolve;
  });

  get isOpen() {
    return this.#controller !== null;
  }

  /** Performs a `response.*` effect: `{id, ok, value | error}`, never throws. */
  async perform(effect) {
    try {
      if (effect.kind === "response.send") this.#send(effect);
      else if (effect.kind === "response.open") this.#open(effect);
      else if (effect.kind === "response.write") await this.#write(effect.chunk);
      else throw new EffectError("unsupported_effect", `unknown effect ${effect.kind}`);
      return { id: effect.id, ok: true, value: {} };
    } catch (err) {
      const code = err instanceof EffectError ? err.code : "stream_closed";
      return { id: effect.id, ok: false, error: { code, message: `${effect.kind}: ${err.message}` } };
    }
  }

  /**
   * The run ended: a stream it opened is closed if it finished the body, aborted otherwise. A response
   * sent early is complete already; a run that failed afterwards was logged by the host.
   */
  finish(out) {
    if (!this.#controller || this.#cancelled) return;
    this.#cancelled = true;
    try {
      if (out?.streamed === true) {
        this.#controller.close();
      } else {
        // The status is already sent: aborting is the only way to tell the client the body is cut.
        this.#controller.error(new Error("the response failed after it started"));
      }
    } catch {
      // the stream was already closed or errored by its reader
    }
  }

  #send({ status, headers, body }) {
    if (this.#controller || this.#sent) throw new EffectError("stream_state", "the response was already sent");
    this.#sent = true;
    this.#resolveOpened(toResponse({ status, headers, body }));
  }

  #open({ status, headers }) {
    if (this.#controller || this.#sent) throw new EffectError("stream_state", "the response is already open");
    const body = new ReadableStream(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        pull: () => this.#release(),
        cancel: () => {
          this.#cancelled = true; // the client went away
          this.#release();
        },
      },
      { highWaterMark: 1 },
    );
    this.#resolveOpened(toResponse({ status, headers, body }));
  }

  async #write(chunk) {
    if (!this.#controller) throw new EffectError("stream_state", "write before response.open");
    if (this.#cancelled) throw new EffectError("stream_closed", "the client closed the response");
    if (typeof chunk !== "string") throw new EffectError("stream_state", "chunk is not text");
    if (chunk.length > 0) this.#controller.enqueue(encoder.encode(chunk));
    // Backpressure: wait until the client has pulled what is queued.
    const closed = () => this.#cancelled || this.#controller.desiredSize === null;
    while (!closed() && this.#controller.desiredSize <= 0) {
      await new Promise((resolve) => {
        this.#wake = resolve;
      });
    }
    if (closed()) throw new EffectError("stream_closed", "the client closed the response");
  }

  #release() {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}

/** For runs that cannot stream (queue, scheduled, rpc). */
export function noStream(effect) {
  return {
    id: effect.id,
    ok: false,
    error: { code: "unsupported_effect", message: `${effect.kind}: only fetch runs can stream` },
  };
}
