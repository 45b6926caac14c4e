import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { e2eSetup, exited, runBridge, startServe, type E2E } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";

/** A reply into the built binary's POST /api/inbound, posted to the fake CRM (docs/http.md, "Replies"). */

const KEY = "inbound-e2e-key-0123456789abcdef";
const PHONE = "+639171234567";
let e2e: E2E;

beforeAll(async () => {
  e2e = await e2eSetup("inbound", { INBOUND_API_KEY: KEY });
});

afterAll(async () => {
  await e2e?.close();
});

function postReply(url: string, body: unknown) {
  return fetch(`${url}/api/inbound`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("dist/bridge, replies", () => {
  test("without CRM_PROVIDER_ID: a warn line at start saying what to set, and 503 with it", async () => {
    const server = await startServe(e2e.env, e2e.dir);
    try {
      // Logged just after the line startServe waits for.
      await waitFor(() => /\[warn\].*CRM_PROVIDER_ID is not set; set it to the id of the app's conversation provider/.test(server.log), 10_000);
      const res = await postReply(server.url, { from: PHONE, text: "hello?" });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toMatch(/CRM_PROVIDER_ID is not set/);
    } finally {
      server.child.kill("SIGTERM");
      await exited(server.child);
    }
  });

  test("a reply to a location's message lands in its HighLevel conversation once, and the log lists it", async () => {
    const env = { ...e2e.env, CRM_PROVIDER_ID: "provider-e2e" };
    const server = await startServe(env, e2e.dir);
    try {
      e2e.crm.grantLocation("code-in", "loc-1");
      expect((await fetch(`${server.url}/oauth-callback?code=code-in`)).status).toBe(200);
      expect((await e2e.webhook(server.url, outbound("m-1", { phone: PHONE }))).status).toBe(200);
      await waitFor(() => e2e.crm.statusReports().length === 1, 10_000);

      const res = await postReply(server.url, { from: PHONE, text: "Yes, see you at 3", id: "sms-1" });
      expect(res.status).toBe(200);
      const { id } = (await res.json()) as { id: string };
      await waitFor(() => e2e.crm.replies.inbound.length === 1, 10_000);
      expect(e2e.crm.replies.inbound[0]?.body).toMatchObject({
        type: "SMS",
        direction: "inbound",
        altId: id,
        message: "Yes, see you at 3",
        conversationProviderId: "provider-e2e",
        contactId: e2e.crm.replies.contacts[0]?.id,
      });
      expect(await (await postReply(server.url, { from: PHONE, text: "Yes, see you at 3", id: "sms-1" })).json()).toEqual({ id, duplicate: true });

      const listed = await runBridge(env, e2e.dir, ["messages", "list", "--status", "posted", "--json"]);
      expect(listed.code).toBe(0);
      expect((JSON.parse(listed.stdout) as { replies: unknown[] }).replies).toEqual([
        expect.objectContaining({ id, location_id: "loc-1", from: "0917***4567", status: "posted", routed_by: "last_sent" }),
      ]);
      expect(e2e.crm.replies.inbound).toHaveLength(1);
    } finally {
      server.child.kill("SIGTERM");
      await exited(server.child);
    }
  });
});
