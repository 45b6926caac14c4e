import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { e2eSetup, runBridge, startServe, type E2E, type Serve } from "../helpers/binary.ts";
import { outbound, waitFor } from "../helpers/bridge.ts";
import { SEND } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";

/** `bridge messages` and `bridge status` of the built binary, beside a running serve (docs/cli.md, "The message log"). */

let e2e: E2E;
let server: Serve;

function bridge(...args: string[]) {
  return runBridge(e2e.env, e2e.dir, args);
}

async function send(messageId: string, fields: Record<string, unknown> = {}) {
  expect((await e2e.webhook(server.url, outbound(messageId, fields))).status).toBe(200);
}

const reported = (messageId: string) => e2e.crm.statusReports().filter((r) => r.messageId === messageId);

beforeAll(async () => {
  e2e = await e2eSetup("messages");
  server = await startServe(e2e.env, e2e.dir);
  e2e.crm.grantLocation("code-m", "loc-1");
  expect((await fetch(`${server.url}/oauth-callback?code=code-m`)).status).toBe(200);
  // Cast refuses the first attempt at one message; everything else goes.
  let refused = false;
  e2e.gateway.on(SEND, (req) => {
    if (refused || !req.body.includes("refused once")) return e2e.gateway.accept();
    refused = true;
    return jsonResponse({ success: false, error: "Sender ID not approved", error_code: "VALIDATION_ERROR" }, 400);
  });
  await send("m-refused", { message: "refused once" });
  await send("m-ok");
  await send("m-landline", { phone: "+6328123456" });
  await waitFor(() => ["m-refused", "m-ok", "m-landline"].every((id) => reported(id).length === 1), 10_000);
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  await e2e?.close();
});

describe("dist/bridge messages, status", () => {
  test("usage --csv beside a running serve: the month's row of the location, each message in its class", async () => {
    const row = async () => (await bridge("usage", "--csv", "--location", "loc-1")).stdout.split("\r\n")[1] ?? "";
    // The CSV's columns (docs/usage.md): messages, parts, delivered, failed, then the failed classes, the refusals, replies.
    let found = await row();
    // A message counts as it is settled, just after its report: the last may be a moment behind.
    for (let tries = 0; tries < 50 && !found.includes(",3,"); tries++) found = await row();
    expect(found).toMatch(/^\d{4}-\d{2},loc-1,[^,]*,3,1,1,2,1,0,1,0,0,0,0,0,1,0,$/);
    expect((await bridge("usage", "--csv")).stdout.split("\r\n")[0]).toMatch(/^month,location_id,location_name,messages,parts,/);
  });

  test("messages list: newest first, phones masked, failures with their reason; --json like the admin API", async () => {
    const table = await bridge("messages", "list");
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^RECEIVED\s+DIRECTION\s+MESSAGE\s+LOCATION\s+PHONE\s+STATUS\s+PARTS\s+WHY$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(2, 4))).toEqual([["out", "m-landline"], ["out", "m-ok"], ["out", "m-refused"]]);
    expect(table.stdout).toContain("0917***4567");
    expect(table.stdout).not.toContain("09171234567");
    expect(lines[1]).toMatch(/failed\s+1\s+not a Philippine mobile number/);

    const failed = await bridge("messages", "list", "--status", "failed", "--json");
    const { messages } = JSON.parse(failed.stdout) as { messages: { message_id: string; error_code: string }[] };
    expect(messages.map((m) => [m.message_id, m.error_code])).toEqual([
      ["m-landline", "invalid_phone"],
      ["m-refused", "gateway_rejected"],
    ]);
  });

  test("messages show: the timeline; an unknown id exits 1 with the contract's text", async () => {
    const shown = await bridge("messages", "show", "m-refused");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/status:\s+failed/);
    expect(shown.stdout).toMatch(/timeline:\n.*received\s+from HighLevel\n.*sending.*\n.*failed\s+gateway_rejected: gateway rejected the message \(400\): Sender ID not approved\n.*reported\s+HighLevel told failed/);
    expect(await bridge("messages", "show", "m-none")).toMatchObject({ code: 1, stderr: "bridge: message not found: m-none\n" });
  });

  test("bad arguments are usage errors (exit 2) that say what is wrong", async () => {
    const status = await bridge("messages", "list", "--status", "lost");
    expect(status.code).toBe(2);
    expect(status.stderr).toContain("--status: must be one of queued, held, sending, on_phone, sent, delivered, failed");
    expect((await bridge("messages", "list", "--since", "last week")).stderr).toContain("--since: must be an ISO 8601 time");
    expect((await bridge("messages", "retry")).stderr).toContain("name the message ids to retry, or use --failed");
    expect((await bridge("messages", "show", "m\n[error] forged")).code).toBe(2);
  });

  test("messages retry: queues what never reached the carrier, refuses what did or cannot be sent to (exit 1); the server sends it once", async () => {
    const refused = await bridge("messages", "retry", "m-ok");
    expect(refused).toMatchObject({ code: 1, stdout: "refused m-ok: it has not failed (it is delivered)\n" });
    const landline = await bridge("messages", "retry", "m-landline");
    expect(landline).toMatchObject({ code: 1, stdout: "refused m-landline: its number cannot be sent to (not a Philippine mobile number: +632***3456)\n" });

    const retried = await bridge("messages", "retry", "--failed", "--json");
    expect(retried.code).toBe(0);
    const outcome = JSON.parse(retried.stdout) as { queued: string[]; refused: { message_id: string }[] };
    expect(outcome.queued).toEqual(["m-refused"]);
    expect(outcome.refused.map((r) => r.message_id)).toEqual(["m-landline"]);

    await waitFor(() => reported("m-refused").length === 2, 10_000);
    expect(reported("m-refused").map((r) => r.body.status)).toEqual(["failed", "delivered"]);
    expect(e2e.gateway.sent().filter((s) => s.message === "refused once")).toHaveLength(2); // refused, then sent once
    const after = JSON.parse((await bridge("messages", "show", "m-refused", "--json")).stdout) as { status: string; timeline: { event: string }[] };
    expect(after.status).toBe("delivered");
    expect(after.timeline.map((t) => t.event)).toContain("requeued");
  });

  test("status --json: the queue by status and the key's balance, read from Cast", async () => {
    const { code, stdout } = await bridge("status", "--json");
    expect(code).toBe(0);
    const view = JSON.parse(stdout) as { queue: Record<string, number>; balances: { key: string; credits: number }[]; backlog: unknown[] };
    expect(view.queue).toEqual({ queued: 0, held: 0, sending: 0, on_phone: 0, sent: 0, delivered: 2, failed: 1 });
    expect(view.backlog).toEqual([]);
    expect(view.balances).toEqual([expect.objectContaining({ key: "messages-glo...", credits: 1000, low: false })]);
    const text = await bridge("status");
    expect(text.stdout).toMatch(/^queue: 0 queued, 0 held, 0 sending, 0 on_phone, 0 sent, 2 delivered, 1 failed$/m);
  });
});
