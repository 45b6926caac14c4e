import type { H3Event } from "h3";
import { jsonResponse, startFake, type Handler, type Recorded } from "./http.ts";

export const SEND = "POST /api/v1/sms/send";

/**
 * A fake Cast.ph v1: accepts every SMS unless a test swaps the handler, and honours
 * `X-Idempotency-Key` as Cast does: the first request with a key is handled and its
 * answer kept; a repeat (even while the first is still being answered) gets that
 * answer again with `X-Idempotent-Replay: true` and sends nothing. 429 and 5xx answers
 * are not kept, so a retry after them is handled anew.
 */
export async function startFakeGateway() {
  let serial = 0;
  const accept = () => jsonResponse({ success: true, message_id: `cast-${++serial}`, parts: 1 });
  let handler: Handler = accept;
  const answers = new Map<string, Promise<Kept | undefined>>();
  /** The requests that reached the handler: replays are not among them. */
  const handled: Recorded[] = [];

  async function handle(req: Recorded, event: H3Event): Promise<Response> {
    const scope = `${req.headers["x-api-key"] ?? ""} ${req.headers["x-idempotency-key"] ?? ""}`;
    const kept = req.headers["x-idempotency-key"] ? answers.get(scope) : undefined;
    const replay = kept && (await kept);
    if (replay) return new Response(replay.body, { status: replay.status, headers: { ...replay.headers, "x-idempotent-replay": "true" } });
    handled.push(req);
    const answering = Promise.resolve(handler(req, event)).then(toResponse);
    if (req.headers["x-idempotency-key"]) answers.set(scope, answering.then(keep, () => undefined));
    return (await answering).clone();
  }

  const fake = await startFake({ [SEND]: handle });
  return {
    ...fake,
    /** Replace how a route answers; for the send route, behind the idempotency cache. */
    on(route: string, next: Handler) {
      if (route === SEND) handler = next;
      else fake.on(route, next);
    },
    /** Every call to the send endpoint, replays included. */
    calls: () => fake.received(SEND),
    /** The SMS requests the gateway handled (not answered from its cache), parsed, with their API key. */
    sent() {
      return handled.map((r) => ({
        apiKey: r.headers["x-api-key"],
        ...(JSON.parse(r.body) as { to: string; message: string; sender_id?: string }),
      }));
    },
    /** The idempotency keys of the calls, in order. */
    keys: () => fake.received(SEND).map((r) => r.headers["x-idempotency-key"]),
    accept,
  };
}

interface Kept {
  status: number;
  body: string;
  headers: Record<string, string>;
}

async function keep(res: Response): Promise<Kept | undefined> {
  if (res.status === 429 || res.status >= 500) return undefined;
  return { status: res.status, body: await res.clone().text(), headers: Object.fromEntries(res.headers.entries()) };
}

function toResponse(value: unknown): Response {
  return value instanceof Response ? value : jsonResponse(value);
}

export type FakeGateway = Awaited<ReturnType<typeof startFakeGateway>>;
