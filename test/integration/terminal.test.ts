import { expect, test } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { cleanStoredNames } from "../../src/core/installs/locations.ts";
import { bridgePerTest, outbound, waitFor, type Bridge } from "../helpers/bridge.ts";
import { sqliteOnly } from "../helpers/test-store.ts";
import { COMPANY_ID } from "../helpers/fake-crm.ts";
import { SEND } from "../helpers/fake-gateway.ts";
import { jsonResponse } from "../helpers/http.ts";

/**
 * Outsiders write text the operator reads: an agency names its locations in HighLevel
 * (any agency may install while ALLOWED_COMPANY_IDS is empty), a webhook carries a
 * phone, HighLevel and Cast answer with error bodies. None of it may act on the
 * operator's terminal (set its title, clear it, write its clipboard: OSC 52) or forge a
 * line of the text log. Human output and text logs show such characters as escapes.
 */

const start = bridgePerTest();

/** Sets the window title, clears the screen and prints a lie. */
const TITLE_AND_CLEAR = "\x1b]0;pwned\x07\x1b[2J ALL LOCATIONS OK";
/** Writes a command to the clipboard, then forges a log line. */
const CLIPBOARD_PHONE = "+639171234567\x1b]52;c;Y3VybCBldmlsLnRlc3QgfCBzaA==\x07";
const FORGED_LINE_PHONE = "+639171234567\n2026-11-25T00:00:00.000Z [error] forged";
/** libphonenumber reads a valid number out of this one. */
const TRAILING_LINE_PHONE = "+639171234567\n[error] forged";

/** Any character a terminal or a log reader may act on instead of showing; output's own line ends aside. */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const UNSAFE_ANYWHERE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const cli = runCli;

/** Each entry of the text log is one line that starts with its time and level. */
function expectHonestLog(b: Bridge) {
  for (const entry of b.logs) {
    expect(entry).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z \[\w+\] [^\n]*\n$/);
    expect(entry.slice(0, -1)).not.toMatch(UNSAFE_ANYWHERE);
  }
}

test("a location name from HighLevel is stored without control characters, and listed inert", async () => {
  const b = await start();
  b.crm.installed.ids = ["loc-evil"];
  b.crm.on("GET /oauth/installedLocations", () => jsonResponse({ locations: [{ _id: "loc-evil", name: TITLE_AND_CLEAR, isInstalled: true }], count: 1 }));
  b.crm.grantCompany("code-co");
  expect((await b.fetch("/oauth-callback?code=code-co")).status).toBe(200);

  expect((await b.core.tokens.get("loc-evil"))?.name).toBe("]0;pwned [2J ALL LOCATIONS OK");
  const listed = await cli(b, "locations", "list");
  expect(listed.code).toBe(0);
  expect(listed.stdout).not.toMatch(UNSAFE);
  expectHonestLog(b);
});

test("locations list: a name stored raw (by an older bridge) shows escaped, on its own row", async () => {
  const b = await start({}, "loc-1", "loc-2");
  await b.core.tokens.setName("loc-1", TITLE_AND_CLEAR);
  await b.core.tokens.setName("loc-2", "Clinic\nloc-9  FAKE ROW");

  const { code, stdout } = await cli(b, "locations", "list");
  expect(code).toBe(0);
  expect(stdout).not.toMatch(UNSAFE);
  const lines = stdout.trimEnd().split("\n");
  expect(lines).toHaveLength(3);
  expect(lines[1]).toMatch(/^loc-1\s+\\x1b\]0;pwned\\x07\\x1b\[2J ALL LOCATIONS OK\s+company-1\s/);
  expect(lines[2]).toMatch(/^loc-2\s+Clinic\\nloc-9  FAKE ROW\s+company-1\s/);

  const json = await cli(b, "locations", "list", "--json");
  expect(json.stdout).not.toMatch(UNSAFE);
  expect((JSON.parse(json.stdout) as { locations: { name: string }[] }).locations[0]?.name).toBe(TITLE_AND_CLEAR);
});

test.each([
  ["OSC 52", CLIPBOARD_PHONE, "+639***A==\\x07"],
  ["a newline and a forged log line", FORGED_LINE_PHONE, "+639***rged"],
  ["a newline after a valid number", TRAILING_LINE_PHONE, "+639***rged"],
])("a phone with %s: failed, never sent; its reason (masked), messages list and show and the text log stay inert", async (_, phone, masked) => {
  const b = await start({}, "loc-1");
  expect((await b.webhook(outbound("m-1", { phone }))).status).toBe(200);
  await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done", 10_000);

  expect(b.gateway.received(SEND)).toEqual([]);
  const stored = await b.core.messages.get("m-1");
  expect(stored).toMatchObject({ outcome: "failed", errorCode: "invalid_phone" });
  expect(stored?.errorMessage).toBe(`not a Philippine mobile number: ${masked}`);
  expect(stored?.errorMessage).not.toMatch(UNSAFE_ANYWHERE);
  expect(b.crm.statusReports().map((r) => r.body.error?.message ?? "")).toEqual([expect.not.stringMatching(UNSAFE_ANYWHERE)]);

  const list = await cli(b, "messages", "list");
  expect(list.code).toBe(0);
  expect(list.stdout).not.toMatch(UNSAFE);
  expect(list.stdout.trimEnd().split("\n")).toHaveLength(2);
  const show = await cli(b, "messages", "show", "m-1");
  expect(show.code).toBe(0);
  expect(show.stdout).not.toMatch(UNSAFE);
  expect(show.stdout).toContain(`invalid_phone: not a Philippine mobile number: ${masked}`);
  expectHonestLog(b);
});

sqliteOnly("stores a value raw, as an older bridge did, with core.db")("messages list and show: a phone and reasons stored raw (by an older bridge) show escaped", async () => {
  const b = await start({}, "loc-1");
  b.gateway.on(SEND, () => jsonResponse({ success: false, error: `sender refused${TITLE_AND_CLEAR}` }, 400));
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done", 10_000);
  // What an older bridge stored: the webhook's phone and a reason as they came.
  const update = "UPDATE jobs SET payload = json_set(payload, '$.phone', ?), error_message = ? WHERE message_id = 'm-1'";
  b.core.db.prepare(update).run("+639171234567\x1b[2J", `not a Philippine mobile number: ${CLIPBOARD_PHONE}`);

  const list = await cli(b, "messages", "list");
  expect(list.stdout).not.toMatch(UNSAFE);
  expect(list.stdout.trimEnd().split("\n")).toHaveLength(2);
  const show = await cli(b, "messages", "show", "m-1");
  expect(show.stdout).not.toMatch(UNSAFE);
  expect(show.stdout).toContain("\\x1b]52;c;");
  expect(list.stdout).toContain("\\x1b[2J");
  expect(show.stdout).toContain("sender refused\\x1b]0;pwned");
  expectHonestLog(b);
});

sqliteOnly("stores a value raw, as an older bridge did, with core.db")("the admin API: a name and a phone stored raw with C1 and bidi characters are answered escaped, the same JSON", async () => {
  const b = await start({}, "loc-1");
  const name = "Clinic\u009b2J\u202eKO SLLIB";
  await b.core.tokens.setName("loc-1", name);
  expect((await b.webhook(outbound("m-1"))).status).toBe(200);
  await waitFor(async () => (await b.core.jobs.get("m-1"))?.state === "done", 10_000);
  const phone = "\u009b2J+639171234567\u202e";
  b.core.db.prepare("UPDATE jobs SET payload = json_set(payload, '$.phone', ?) WHERE message_id = 'm-1'").run(phone);

  for (const path of ["/api/admin/locations", "/api/admin/messages", "/api/admin/messages/m-1"]) {
    const res = await b.admin(path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const raw = await res.text();
    expect(raw, path).not.toMatch(UNSAFE_ANYWHERE);
    expect(raw, path).toMatch(/\\u009b2J/);
    expect(raw, path).toMatch(/\\u202e/);
  }
  const listed = (await (await b.admin("/api/admin/locations")).json()) as { locations: { name: string }[] };
  expect(listed.locations[0]?.name).toBe(name);
  const shown = (await (await b.admin("/api/admin/messages/m-1")).json()) as { phone: string };
  expect(shown.phone).toMatch(/^\u009b.*\u202e$/);
});

test("serve's start cleans names stored with control characters; a name of nothing else stays (escaped in every output)", async () => {
  const b = await start({}, "loc-1", "loc-2", "loc-3");
  await b.core.tokens.setName("loc-1", TITLE_AND_CLEAR);
  await b.core.tokens.setName("loc-2", "\u202e\u009b");
  await b.core.tokens.setName("loc-3", "Clinic");
  expect(await cleanStoredNames(b.core.tokens)).toBe(1);
  expect((await b.core.tokens.listings()).map((l) => l.name)).toEqual(["]0;pwned [2J ALL LOCATIONS OK", "\u202e\u009b", "Clinic"]);
  expect(await cleanStoredNames(b.core.tokens)).toBe(0);
});

test("sync: an error body from HighLevel's side shows escaped in the table, the exit message and the log", async () => {
  const b = await start();
  b.crm.installed.ids = ["a"];
  b.crm.grantCompany("code-co");
  expect((await b.fetch("/oauth-callback?code=code-co")).status).toBe(200);
  b.crm.installed.ids = ["a", "b"];
  // Not JSON (JSON would escape it): a proxy's or a load balancer's answer.
  b.crm.on("POST /oauth/locationToken", () => new Response(`denied${TITLE_AND_CLEAR}`, { status: 403 }));

  const { code, stdout, stderr } = await cli(b, "locations", "sync");
  expect(code).toBe(1);
  expect(stdout).toContain(COMPANY_ID);
  expect(stdout).toContain("\\x1b]0;pwned");
  expect(stdout).not.toMatch(UNSAFE);
  expect(stderr).not.toMatch(UNSAFE);
  expectHonestLog(b);
});

test("token refresh: an error body from HighLevel's side shows escaped; a CLI error message too", async () => {
  const b = await start({}, "loc-1");
  b.crm.on("POST /oauth/token", () => new Response(`bad gateway${TITLE_AND_CLEAR}`, { status: 502 }));

  const { code, stdout, stderr } = await cli(b, "token", "refresh", "loc-1", "--force");
  expect(code).toBe(1);
  expect(stdout).toContain("\\x1b]0;pwned");
  expect(stdout).not.toMatch(UNSAFE);
  expect(stderr).not.toMatch(UNSAFE);
});

test("a configuration error still lists its problems one a line", async () => {
  const b = await start({}, "loc-1");
  const { code, stderr } = await runCli({ env: { ...b.env, LOG_LEVEL: "loud", LOG_FORMAT: "xml" } }, "locations", "list");
  expect(code).toBe(1);
  expect(stderr).toMatch(/^bridge: invalid configuration:\n {2}- LOG_LEVEL: [^\n]+\n {2}- LOG_FORMAT: [^\n]+\n$/);
});
