import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, test } from "vitest";
import { e2eSetup, exited, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";

/**
 * kill -9 of `dist/bridge serve` while replies arrive through POST /api/inbound and go on
 * to HighLevel (docs/RELIABILITY.md): every reply acknowledged is stored, none is posted
 * twice, and one a kill caught between "posting" committed and HighLevel's answer stored
 * is looked up in HighLevel at the next start (HighLevel does not deduplicate on altId):
 * found, it is settled with HighLevel's id; so every one ends posted, once.
 */

const REPLIES = 500;
const KILLS = 4;
/** A kill comes after this many more acknowledgements; every other one waits for a post in flight too. */
const ACKS_PER_KILL = 90;
const KEY = "crash-inbound-key-0123456789abcdef";
const LOCATION = "loc-1";

let e2e: E2E;
let server: Serve | undefined;

/** Figures of the last run, printed for docs/RELIABILITY.md. */
const figures = { replies: REPLIES, acknowledged: 0, kills: 0, killsMidPost: 0, lookups: 0, posted: 0, failed: 0, postedTwice: 0 };

beforeAll(async () => {
  e2e = await e2eSetup("crash-inbound", { INBOUND_API_KEY: KEY, CRM_PROVIDER_ID: "provider-crash" });
  // HighLevel answers slowly: a kill often finds a post in flight.
  e2e.crm.replies.state.delayMs = 40;
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

/** bridge's id of the reply once a server acknowledged it (2xx); undefined: not acknowledged. */
async function postReply(url: string, n: number): Promise<string | undefined> {
  try {
    const res = await fetch(`${url}/api/inbound`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ from: `+6391700${String(n).padStart(5, "0")}`, text: `crash reply ${n}`, location_id: LOCATION, id: `sms-${n}` }),
    });
    if (res.status < 200 || res.status > 299) return undefined;
    return ((await res.json()) as { id: string }).id;
  } catch {
    return undefined; // the server was down: not acknowledged, so the sender sends it again
  }
}

/** The admin API's reply counts (docs/http.md, `GET /api/admin/status`). */
async function inboundCounts(url: string): Promise<{ received: number; waiting: number; unrouted: number } | undefined> {
  try {
    const res = await fetch(`${url}/api/admin/status`, { headers: { authorization: `Bearer ${KEY}` } });
    return ((await res.json()) as { inbound: { received: number; waiting: number; unrouted: number } }).inbound;
  } catch {
    return undefined;
  }
}

interface Listed {
  id: string;
  status: string;
  error: string | null;
  crm_message_id: string | null;
}

async function listReplies(env: Record<string, string>, dir: string, status?: string): Promise<Listed[]> {
  const listed = await runBridge(env, dir, ["messages", "list", "--json", "--limit", "1000", ...(status ? ["--status", status] : [])]);
  expect(listed.code, listed.stderr).toBe(0);
  return (JSON.parse(listed.stdout) as { replies: Listed[] }).replies;
}

test(`kill -9 ${KILLS} times during ${REPLIES} replies: every one acknowledged is stored and posted once, a post a kill caught looked up`, async () => {
  const { crm, env, dir } = e2e;
  server = await startServe(env, dir);
  crm.grantLocation("code-crash-in", LOCATION);
  expect((await fetch(`${server.url}/oauth-callback?code=code-crash-in`)).status).toBe(200);

  /** The sender's id (`sms-N`) -> bridge's id; every answer for one reply must name the same. */
  const acknowledged = new Map<string, string>();
  const mismatched: string[] = [];
  let onAck = () => {};
  let next = 0;
  const sender = async () => {
    while (next < REPLIES) {
      const n = next++;
      const sourceId = `sms-${n}`;
      // Sent again, with the same id, until a server answers 2xx: as the phone and HighLevel do.
      for (;;) {
        const id = server && (await postReply(server.url, n));
        if (id) {
          if (acknowledged.has(sourceId) && acknowledged.get(sourceId) !== id) mismatched.push(sourceId);
          acknowledged.set(sourceId, id);
          onAck();
          break;
        }
        await sleep(25); // the sender's pause before it sends the reply again
      }
    }
  };
  const senders = Promise.all(Array.from({ length: 8 }, sender));

  for (let kill = 0; kill < KILLS; kill++) {
    // Signals of progress, never a timer: enough acknowledgements, then (every other kill)
    // HighLevel taking a post, before its answer leaves: "posting" is committed, no answer stored.
    const target = Math.min(REPLIES, acknowledged.size + ACKS_PER_KILL);
    await new Promise<void>((resolve) => {
      onAck = () => acknowledged.size >= target && resolve();
      onAck();
    });
    onAck = () => {};
    if (kill % 2 === 0) {
      await new Promise<void>((resolve) => (crm.replies.state.onInbound = () => resolve()));
      crm.replies.state.onInbound = undefined;
      figures.killsMidPost++;
    }
    const victim = server!;
    server = undefined;
    victim.child.kill("SIGKILL");
    await exited(victim.child);
    figures.kills++;
    server = await startServe(env, dir);
  }
  await senders;
  figures.acknowledged = acknowledged.size;
  expect(acknowledged.size).toBe(REPLIES);
  expect(mismatched).toEqual([]);

  // The queue drains: every reply stored, none waiting (posted or settled).
  for (;;) {
    const counts = await inboundCounts(server!.url);
    if (counts && counts.received >= REPLIES && counts.waiting === 0 && counts.unrouted === 0) break;
    await sleep(50);
  }
  server!.child.kill("SIGTERM");
  expect(await exited(server!.child)).toBe(0);
  server = undefined;

  const replies = await listReplies(env, dir);
  const stored = new Map(replies.map((r) => [r.id, r]));
  // Every reply acknowledged is in the database, and nothing else is.
  expect(replies).toHaveLength(REPLIES);
  for (const id of acknowledged.values()) expect(stored.has(id), `acknowledged ${id} is not stored`).toBe(true);

  // None posted to HighLevel twice: counted by altId in what the fake received.
  const posts = new Map<string, number>();
  for (const { body } of crm.replies.inbound) posts.set(String(body.altId), (posts.get(String(body.altId)) ?? 0) + 1);
  figures.postedTwice = [...posts.values()].filter((n) => n > 1).length;
  expect(figures.postedTwice).toBe(0);

  // Each one posted, with HighLevel's id for it: one a kill caught mid-post was found by a lookup.
  const taken = new Map(crm.replies.inbound.map((r) => [String(r.body.altId), r.messageId]));
  for (const r of replies) {
    expect(r.status, `${r.id}: ${r.error ?? ""}`).toBe("posted");
    expect(r.crm_message_id, r.id).toBe(taken.get(r.id));
  }
  figures.posted = replies.filter((r) => r.status === "posted").length;
  figures.failed = replies.length - figures.posted;
  // A kill that waited for a post in flight left one "posting": looked up at the next start.
  figures.lookups = crm.received("GET /conversations/search").length;
  expect(figures.lookups).toBeGreaterThanOrEqual(figures.killsMidPost);
  expect(await listReplies(env, dir, "failed")).toEqual([]);
  console.log(`crash test, replies: ${JSON.stringify(figures)}`);
}, 240_000);
