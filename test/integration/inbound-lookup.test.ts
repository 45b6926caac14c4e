import { describe, expect, test } from "vitest";
import { bridgePerTest, waitFor, type Bridge, type BridgeOptions } from "../helpers/bridge.ts";
import { jsonResponse } from "../helpers/http.ts";

/**
 * A reply whose post to HighLevel got no clear answer (a timeout, a 500, a stop mid-post)
 * is looked up in HighLevel before it is posted again (CONTRACT section 10): found, it is
 * settled with HighLevel's id; absent at two lookups, posted again. And one contact's
 * replies reach HighLevel in the order they came.
 */
const PROVIDER = "provider-0123456789";
const PHONE = "+639171234567";
const POST = "POST /conversations/messages/inbound";
const SEARCH = "GET /conversations/search";
const start = bridgePerTest();

function bridgeWith(options: BridgeOptions = {}): Promise<Bridge> {
  return start({ ...options, env: { CRM_PROVIDER_ID: PROVIDER, ...options.env } }, "loc-1");
}

async function reply(bridge: Bridge, text: string, from = PHONE): Promise<string> {
  const res = await bridge.admin("/api/inbound", { method: "POST", body: JSON.stringify({ from, text, location_id: "loc-1" }) });
  expect(res.status).toBe(200);
  return String(((await res.json()) as { id: string }).id);
}

async function stored(bridge: Bridge, id: string) {
  return await bridge.core.replies.get(id);
}

/** HighLevel takes the post, then answers `status` instead of its answer: the answer is lost. */
function takeThenAnswer(bridge: Bridge, status: number, times = 1): void {
  const taken = bridge.crm.replies.routes[POST];
  let left = times;
  bridge.crm.on(POST, async (req, event) => {
    const answer = await taken(req, event);
    return left-- > 0 ? jsonResponse({ message: "Internal Server Error" }, status) : answer;
  });
}

describe("a post whose answer was lost is looked up before it is posted again", () => {
  test.each([
    ["flat", false],
    ["wrapped in messages", true],
  ])("answered 500 after HighLevel took it: found by the lookup (%s), settled with HighLevel's id, not posted twice", async (_, wrapped) => {
    const bridge = await bridgeWith();
    bridge.crm.replies.state.wrapped = wrapped;
    takeThenAnswer(bridge, 500);
    const id = await reply(bridge, "did it arrive?");
    await waitFor(async () => (await stored(bridge, id))?.state === "done");
    expect(bridge.crm.received(POST)).toHaveLength(1);
    expect((await stored(bridge, id))?.crmMessageId).toBe(bridge.crm.replies.inbound[0]?.messageId);
    const [search] = bridge.crm.received(SEARCH);
    expect(search?.headers).toMatchObject({ version: "2021-04-15", authorization: "Bearer at-seed-loc-1" });
    expect(Object.fromEntries(search?.query ?? [])).toEqual({ locationId: "loc-1", contactId: bridge.crm.replies.contacts[0]?.id });
    expect(bridge.logs.join("")).toContain(`reply ${id}: found in HighLevel, which had taken its post`);
  });

  test("a post that timed out after HighLevel took it: found by the lookup, not posted twice", async () => {
    const bridge = await bridgeWith({ tuning: { crm: { timeoutMs: 300 } } });
    bridge.crm.replies.state.delayMs = 1000;
    const id = await reply(bridge, "slow");
    await waitFor(() => bridge.crm.received(POST).length === 1);
    bridge.crm.replies.state.delayMs = 0;
    await waitFor(async () => (await stored(bridge, id))?.state === "done");
    expect(bridge.crm.received(POST)).toHaveLength(1);
    expect((await stored(bridge, id))?.crmMessageId).toBe(bridge.crm.replies.inbound[0]?.messageId);
  });

  test("answered 500 before HighLevel took it: not found at two lookups, then posted again, once", async () => {
    const bridge = await bridgeWith();
    const taken = bridge.crm.replies.routes[POST];
    let refusals = 1;
    bridge.crm.on(POST, (req, event) => (refusals-- > 0 ? jsonResponse({ message: "Internal Server Error" }, 500) : taken(req, event)));
    const id = await reply(bridge, "lost on the way");
    await waitFor(async () => (await stored(bridge, id))?.state === "done");
    expect(bridge.crm.received(POST)).toHaveLength(2);
    expect(bridge.crm.received(SEARCH)).toHaveLength(2);
    expect(bridge.crm.replies.inbound).toHaveLength(1);
    expect(bridge.logs.join("")).toContain(`reply ${id} of location loc-1: not found in HighLevel after 2 lookups; posted again`);
  });

  test("every post answered 500 and never found: posted again until the tries are spent, then failed as not delivered", async () => {
    const bridge = await bridgeWith({ tuning: { reportAttempts: 2 } });
    bridge.crm.on(POST, () => jsonResponse({ message: "Internal Server Error" }, 500));
    const id = await reply(bridge, "into the void");
    await waitFor(async () => (await stored(bridge, id))?.state === "dead");
    expect((await stored(bridge, id))?.error).toBe("not delivered to HighLevel: no clear answer to 2 tries, and not found there");
    expect(bridge.crm.received(POST)).toHaveLength(2);
    expect(bridge.crm.received(SEARCH)).toHaveLength(4);
  });

  test("the lookup refused (403, a scope missing): delivery unknown, not posted again", async () => {
    const bridge = await bridgeWith();
    takeThenAnswer(bridge, 504);
    bridge.crm.replies.state.lookupDown = 403;
    const id = await reply(bridge, "cannot look");
    await waitFor(async () => (await stored(bridge, id))?.state === "dead");
    expect((await stored(bridge, id))?.error).toMatch(/^delivery unknown: it could not be looked up in HighLevel \(conversation search endpoint returned 403/);
    expect(bridge.crm.received(POST)).toHaveLength(1);
  });

  test("the lookup unavailable (503), then back: looked up again, found, not posted twice", async () => {
    const bridge = await bridgeWith();
    takeThenAnswer(bridge, 500);
    bridge.crm.replies.state.lookupDown = 503;
    const id = await reply(bridge, "patience");
    await waitFor(() => bridge.crm.received(SEARCH).length >= 2);
    expect((await stored(bridge, id))?.state).toBe("posting");
    bridge.crm.replies.state.lookupDown = 0;
    await waitFor(async () => (await stored(bridge, id))?.state === "done");
    expect(bridge.crm.received(POST)).toHaveLength(1);
  });
});

test("the same words twice in one second: the lookup does not take the first's message for the second, which is posted", async () => {
  const bridge = await bridgeWith();
  const same = { from: PHONE, text: "ok", location_id: "loc-1", received_at: "2026-11-24T08:00:00+08:00" };
  const send = async (id: string) => (await (await bridge.admin("/api/inbound", { method: "POST", body: JSON.stringify({ ...same, id }) })).json()) as { id: string };
  const first = await send("sms-1");
  await waitFor(async () => (await stored(bridge, first.id))?.state === "done");
  const taken = bridge.crm.replies.routes[POST];
  let refusals = 1;
  bridge.crm.on(POST, (req, event) => (refusals-- > 0 ? jsonResponse({ message: "Internal Server Error" }, 500) : taken(req, event)));
  const second = await send("sms-2");
  await waitFor(async () => (await stored(bridge, second.id))?.state === "done");
  expect(bridge.crm.replies.inbound.map((m) => m.body.altId)).toEqual([first.id, second.id]);
  expect((await stored(bridge, second.id))?.crmMessageId).toBe(bridge.crm.replies.inbound[1]?.messageId);
});

describe("a reply a stopped process was posting is looked up at start", () => {
  test("HighLevel had taken it: found, settled with HighLevel's id, not posted again", async () => {
    const bridge = await bridgeWith({ worker: false });
    const id = await reply(bridge, "mid-post");
    const row = await stored(bridge, id);
    // What the stopped process had posted: the contact, then the message HighLevel took.
    const headers = { authorization: "Bearer at-seed-loc-1", version: "2021-04-15", "content-type": "application/json" };
    const upsert = await fetch(`${bridge.crm.url}/contacts/upsert`, { method: "POST", headers, body: JSON.stringify({ locationId: "loc-1", phone: PHONE }) });
    const contactId = ((await upsert.json()) as { contact: { id: string } }).contact.id;
    const date = new Date(row?.receivedMs ?? 0).toISOString();
    const body = { type: "SMS", direction: "inbound", contactId, message: "mid-post", altId: id, date, conversationProviderId: PROVIDER };
    await fetch(`${bridge.crm.url}/conversations/messages/inbound`, { method: "POST", headers, body: JSON.stringify(body) });
    await bridge.core.replies.setContact(row?.id ?? 0, contactId, Date.now());
    expect(await bridge.core.replies.markPosting(row?.id ?? 0, Date.now())).toBe(true);

    await bridge.core.inbound.queue.start();
    await waitFor(async () => (await stored(bridge, id))?.state === "done");
    expect((await stored(bridge, id))?.crmMessageId).toBe(bridge.crm.replies.inbound[0]?.messageId);
    expect(bridge.crm.received(POST)).toHaveLength(1);
    expect(bridge.logs.join("")).toContain("1 reply(ies) were being posted to HighLevel when bridge stopped: each is looked up there before it is posted again");
  });

  test("HighLevel had not taken it: not found at two lookups, posted once", async () => {
    const bridge = await bridgeWith({ worker: false });
    const id = await reply(bridge, "never left");
    expect(await bridge.core.replies.markPosting((await stored(bridge, id))?.id ?? 0, Date.now())).toBe(true);
    await bridge.core.inbound.queue.start();
    await waitFor(async () => (await stored(bridge, id))?.state === "done");
    expect(bridge.crm.received(SEARCH)).toHaveLength(2);
    expect(bridge.crm.received(POST)).toHaveLength(1);
  });
});

test("one contact's replies reach HighLevel in the order they came, one retried after a 429 too; another contact's do not wait", async () => {
  const bridge = await bridgeWith({ worker: false });
  const taken = bridge.crm.replies.routes[POST];
  let limited = 1;
  bridge.crm.on(POST, (req, event) => (limited-- > 0 ? jsonResponse({ message: "Too many requests" }, 429, { "retry-after": "1" }) : taken(req, event)));
  await reply(bridge, "first");
  await reply(bridge, "second");
  await reply(bridge, "other contact", "+639180000000");
  await reply(bridge, "third");
  await bridge.core.inbound.queue.start();
  await waitFor(() => bridge.crm.replies.inbound.length === 4);
  expect(bridge.crm.replies.inbound.map((m) => m.body.message)).toEqual(["other contact", "first", "second", "third"]);
});
