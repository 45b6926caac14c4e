import { expect, test } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";

// The operator's view of replies: bridge messages list (both directions) and route.

const start = bridgePerTest();

const cli = runCli;

async function reply(b: Bridge, body: Record<string, unknown>): Promise<string> {
  const res = await b.admin("/api/inbound", { method: "POST", body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return String(((await res.json()) as { id: string }).id);
}

test("messages list shows replies beside sends, senders masked; --status unrouted; route posts it", async () => {
  const b = await start({ env: { CRM_PROVIDER_ID: "provider-1" } }, "loc-1");
  expect((await b.webhook(outbound("m-1", { phone: "+639171234567" }))).status).toBe(200);
  await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done", 10_000);
  const routed = await reply(b, { from: "+639171234567", text: "thanks" });
  const unrouted = await reply(b, { from: "+639180001111", text: "who?" });
  await waitFor(async () => (await b.core.replies.get(routed))?.state === "done");

  const list = await cli(b, "messages", "list");
  expect(list.code).toBe(0);
  const lines = list.stdout.trimEnd().split("\n");
  expect(lines[0]).toMatch(/^RECEIVED\s+DIRECTION\s+MESSAGE\s+LOCATION\s+PHONE\s+STATUS\s+PARTS\s+WHY$/);
  expect(lines.slice(1).map((l) => l.split(/\s+/).slice(2, 7))).toEqual([
    ["in", unrouted, "-", "0918***1111", "unrouted"],
    ["in", routed, "loc-1", "0917***4567", "posted"],
    ["out", "m-1", "loc-1", "0917***4567", "delivered"],
  ]);
  expect(list.stdout).not.toContain("09180001111");

  const only = await cli(b, "messages", "list", "--status", "unrouted", "--json");
  const parsed = JSON.parse(only.stdout) as { messages: unknown[]; replies: { id: string; from: string; status: string }[] };
  expect(parsed.messages).toEqual([]);
  expect(parsed.replies.map((r) => [r.id, r.from, r.status])).toEqual([[unrouted, "0918***1111", "unrouted"]]);

  expect(await cli(b, "messages", "route", unrouted, "loc-9")).toMatchObject({ code: 1, stderr: "bridge: loc-9 is not a location where the app is installed\n" });
  const route = await cli(b, "messages", "route", unrouted, "loc-1");
  expect(route).toMatchObject({ code: 0, stdout: `routed ${unrouted} to loc-1: a running bridge serve posts it to HighLevel within a second\n` });
  await waitFor(async () => (await b.core.replies.get(unrouted))?.state === "done");
  expect(b.crm.replies.inbound.map((m) => m.body.message)).toEqual(["thanks", "who?"]);
  expect(await cli(b, "messages", "route", unrouted, "loc-1")).toMatchObject({ code: 1, stderr: `bridge: reply ${unrouted} is routed already (to loc-1)\n` });
});

test("messages list --status: a status neither side has is a usage error naming both sides'", async () => {
  const b = await start({}, "loc-1");
  const bad = await cli(b, "messages", "list", "--status", "lost");
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--status: must be one of queued, held, sending, on_phone, sent, delivered, failed; replies: unrouted, posting, posted");
});

test("messages show shows a reply by the id messages list prints: text, --json, and the admin API alike", async () => {
  const b = await start({ env: { CRM_PROVIDER_ID: "provider-1" } }, "loc-1");
  const id = await reply(b, { from: "+639171234567", text: "thanks", to: "+639181234567", location_id: "loc-1" });
  await waitFor(async () => (await b.core.replies.get(id))?.state === "done");
  expect((await cli(b, "messages", "list")).stdout).toContain(id);

  const text = await cli(b, "messages", "show", id);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(new RegExp(`^reply: +${id}$`, "m"));
  expect(text.stdout).toMatch(/^from: +0917\*\*\*4567$/m);
  expect(text.stdout).toMatch(/^to: +0918\*\*\*4567$/m);
  expect(text.stdout).toMatch(/^status: +posted$/m);
  expect(text.stdout).toMatch(/^text: +6 characters$/m);
  expect(text.stdout).not.toContain("9171234567");

  const json = JSON.parse((await cli(b, "messages", "show", id, "--json")).stdout) as Record<string, unknown>;
  expect(json).toMatchObject({ id, direction: "inbound", location_id: "loc-1", from: "0917***4567", status: "posted", length: 6, opt_out: "" });
  const res = await b.admin(`/api/admin/messages/${id}`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual(json);

  // Neither a message nor a reply: not found, as before.
  expect(await cli(b, "messages", "show", "in-nothing")).toMatchObject({ code: 1, stderr: "bridge: message not found: in-nothing\n" });
  expect((await b.admin("/api/admin/messages/in-nothing")).status).toBe(404);
});

test("a STOP reply that opts a number out is logged at info, the number masked, with its location; START too", async () => {
  const b = await start({ env: { CRM_PROVIDER_ID: "provider-1" } }, "loc-1");
  const stop = await reply(b, { from: "+639171234567", text: "STOP", location_id: "loc-1" });
  expect(b.logs.join("")).toContain(
    `[info] reply ${stop} from 0917***4567 to location loc-1 is a stop word; the number is opted out: no message of the location goes to it`,
  );
  const start_ = await reply(b, { from: "+639171234567", text: "START", location_id: "loc-1" });
  expect(b.logs.join("")).toContain(`[info] reply ${start_} from 0917***4567 to location loc-1 is a start word; the number is opted back in`);
  expect(b.logs.join("")).not.toContain("9171234567");
});
