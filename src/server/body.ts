import type { Readable } from "node:stream";
import type { H3Event } from "h3";
import { httpError } from "./http-error.ts";

/**
 * Requests larger than this are refused with 413 (docs/http.md, "Limits before anyone is authenticated").
 * A webhook is a few KiB and an admin config body a few hundred bytes, so one limit serves both.
 */
export const BODY_LIMIT = 256 * 1024;

/**
 * Bytes of bodies not yet authenticated (webhooks before their signature is checked)
 * held in memory at once, over all requests. A limit per request alone lets every
 * held connection park a body's worth, and a flood of slow uploads grew the server
 * by gigabytes. 32 MiB is 128 bodies at the limit, or thousands of real webhooks (a
 * few KiB each), and small beside the server's own footprint: test/e2e/limits.test.ts
 * keeps the executable under 200 MiB through such a flood.
 */
export const UNSIGNED_BODY_BUDGET = 32 * 1024 * 1024;

/** The shared total, from which each request's body takes a lease. */
export interface BodyBudget {
  /** Bytes leased now (tests read it to see every lease returned). */
  readonly used: number;
  lease(): BodyLease;
}

/** One request's share of the budget. */
export interface BodyLease {
  /** Makes the lease hold at least `bytes`; false, taking nothing, when the budget lacks them. */
  cover(bytes: number): boolean;
  /** Gives everything back; safe to call more than once. */
  release(): void;
}

export function createBodyBudget(total = UNSIGNED_BODY_BUDGET): BodyBudget {
  let used = 0;
  return {
    get used() {
      return used;
    },
    lease() {
      let held = 0;
      return {
        cover(bytes) {
          if (!(bytes > held)) return true;
          if (used + bytes - held > total) return false;
          used += bytes - held;
          held = bytes;
          return true;
        },
        release() {
          used -= held;
          held = 0;
        },
      };
    },
  };
}

/**
 * The raw request body, read incrementally: a body over the limit is refused as
 * soon as it crosses it (or at once, from Content-Length), never buffered whole.
 * With a lease, its bytes are counted against the shared budget first, the declared
 * length up front and a chunked body as it arrives; the caller releases the lease.
 * A client that hangs up mid-body gets a 400 nobody will read, not a server error.
 */
export async function readLimitedBody(event: H3Event, lease?: BodyLease, limit = BODY_LIMIT): Promise<Uint8Array> {
  const declared = Number(event.req.headers.get("content-length") ?? "0");
  if (declared > limit) throw tooLarge(limit);
  if (lease && !lease.cover(declared)) throw busy();
  const node = event.req.runtime?.node?.req;
  if (node) return readNode(node, limit, lease);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of event.req.body ?? []) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge(limit);
    if (lease && !lease.cover(size)) throw busy();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Node's own request stream, read with its events: a web ReadableStream, or `for await`
 * over the stream (an async iterator, an end-of-stream watcher and a promise per chunk),
 * cost intake measurably (docs/PERFORMANCE.md).
 */
function readNode(req: Readable, limit: number, lease: BodyLease | undefined): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      const refusal = size > limit ? tooLarge(limit) : lease && !lease.cover(size) ? busy() : undefined;
      if (refusal) {
        req.pause(); // read no more of it: the answer closes the connection
        return finish(refusal);
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onClose = () => finish(httpError(400, "request body incomplete: the client closed the connection"));
    function finish(error?: unknown) {
      req.off("data", onData).off("end", onEnd).off("error", onClose).off("close", onClose);
      if (error) reject(error);
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    }
    // Gone before we got to it: no 'close' would come to settle this.
    if (req.destroyed) return onClose();
    req.on("data", onData).on("end", onEnd).on("error", onClose).on("close", onClose);
  });
}

/** The body as JSON; 400 when it is not. */
export function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"));
  } catch {
    throw httpError(400, "request body is not valid JSON");
  }
}

/** 413, and the connection closes after it: the rest of the upload is never read. */
function tooLarge(limit: number) {
  return httpError(413, `request body is larger than ${limit} bytes`, { connection: "close" });
}

/**
 * The budget is spent: 429, the one status HighLevel retries (a real webhook refused
 * here comes again), and the connection closes, so the rest of this upload is not read.
 */
function busy() {
  return httpError(429, "too many request bodies being received; retry later", { connection: "close", "retry-after": "5" });
}
