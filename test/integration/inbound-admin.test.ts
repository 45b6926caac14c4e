import { expect, test } from "vitest";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

/** Replies in the admin API's message log (docs/http.md, `GET /api/admin/messages`), as `bridge messages list --json` lists them. */

const start = bridgePerTest();
const PHONE = "+639171234567";

interface Page {
  messages: { message_id: string }[];
  next_cursor: string | null;
  replies: { id: string; status: string; location_id: string; from: string; error: string | null; crm_message_id: string | null }[];
}

async function list(bridge: Bridge, query = ""): Promise<{ status: number; body: Page & { error?: string } }> {
  const res = await bridge.admin(`/api/admin/messages${query}`);
  return { status: res.status, body: (await res.json()) as Page & { error?: string } };
}

async function reply(bridge: Bridge, body: Record<string, unknown>): Promise<string> {
  const res = await bridge.admin("/api/inbound", { method: "POST", body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { id: string }).id;
}

/** loc-1 sent m-1; a reply to loc-1 is posted, one to loc-2 is refused for good (400), one routes nowhere. */
async function world() {
  const bridge = await start({ env: { CRM_PROVIDER_ID: "provider-admin" } }, "loc-1", "loc-2");
  expect((await bridge.webhook(outbound("m-1", { locationId: "loc-1", phone: PHONE }))).status).toBe(200);
  await waitFor(async () => (await bridge.core.jobs.get("m-1"))?.state === "done", 10_000);
  const posted = await reply(bridge, { from: PHONE, text: "yes", location_id: "loc-1" });
  await waitFor(async () => (await bridge.core.replies.get(posted))?.state === "done");
  const unrouted = await reply(bridge, { from: "+639180000000", text: "who is this?" });
  return { bridge, posted, unrouted };
}

test("the log lists replies beside the messages, newest first, the sender masked", async () => {
  const { bridge, posted, unrouted } = await world();
  const { status, body } = await list(bridge);
  expect(status).toBe(200);
  expect(body.messages.map((m) => m.message_id)).toEqual(["m-1"]);
  expect(body.replies.map((r) => r.id)).toEqual([unrouted, posted]);
  expect(body.replies[1]).toMatchObject({
    status: "posted",
    location_id: "loc-1",
    from: "0917***4567",
    crm_message_id: bridge.crm.replies.inbound[0]?.messageId,
  });
  expect(body.replies[0]).toMatchObject({ status: "unrouted", location_id: "", from: "0918***0000" });
});

test("a status only replies have reads only replies; one both have reads both; location and limit hold for both", async () => {
  const { bridge, posted, unrouted } = await world();
  expect((await list(bridge, "?status=posted")).body).toMatchObject({ messages: [], next_cursor: null, replies: [{ id: posted }] });
  expect((await list(bridge, "?status=unrouted")).body.replies.map((r) => r.id)).toEqual([unrouted]);
  expect((await list(bridge, "?status=delivered")).body).toMatchObject({ messages: [{ message_id: "m-1" }], replies: [] });
  expect((await list(bridge, "?status=queued")).body).toMatchObject({ messages: [], replies: [] });
  expect((await list(bridge, "?location=loc-2")).body).toMatchObject({ messages: [], replies: [] });
  expect((await list(bridge, "?location=loc-1")).body.replies.map((r) => r.id)).toEqual([posted]);
  expect((await list(bridge, "?limit=1")).body.replies.map((r) => r.id)).toEqual([unrouted]);
});

test("a reply HighLevel refused is listed failed with the reason", async () => {
  const bridge = await start({ env: { CRM_PROVIDER_ID: "provider-admin" } }, "loc-1");
  bridge.crm.replies.state.down = 400;
  const id = await reply(bridge, { from: PHONE, text: "hello", location_id: "loc-1" });
  await waitFor(async () => (await bridge.core.replies.get(id))?.state === "dead");
  const { body } = await list(bridge, "?status=failed");
  expect(body.replies).toEqual([expect.objectContaining({ id, status: "failed", error: expect.stringContaining("400") })]);
});

test("replies come on the first page only: following next_cursor meets each once", async () => {
  const bridge = await start({ env: { CRM_PROVIDER_ID: "provider-admin" } }, "loc-1");
  for (const m of ["m-1", "m-2"]) expect((await bridge.webhook(outbound(m, { locationId: "loc-1", phone: PHONE }))).status).toBe(200);
  await waitFor(async () => (await Promise.all(["m-1", "m-2"].map((m) => bridge.core.jobs.get(m)))).every((found) => found?.state === "done"), 10_000);
  const id = await reply(bridge, { from: PHONE, text: "ok", location_id: "loc-1" });
  const first = await list(bridge, "?limit=1");
  expect(first.body.replies.map((r) => r.id)).toEqual([id]);
  const second = await list(bridge, `?limit=1&cursor=${first.body.next_cursor}`);
  expect(second.body).toMatchObject({ messages: [{ message_id: "m-1" }], replies: [] });
});

test("a status neither has is a 400 naming every status", async () => {
  const bridge = await start({ env: { CRM_PROVIDER_ID: "provider-admin" } }, "loc-1");
  const { status, body } = await list(bridge, "?status=lost");
  expect(status).toBe(400);
  expect(body.error).toContain("status: must be one of queued, held, sending, on_phone, sent, delivered, failed, unrouted, posting, posted");
});
