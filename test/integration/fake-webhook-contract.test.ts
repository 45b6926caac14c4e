import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, test } from "vitest";
import { ANSWER_FILES, ANSWERS, startFakeWebhook, type Answer } from "../helpers/fake-webhook.ts";
import { DOCUMENTED, textFixture } from "../helpers/fixtures.ts";

// The fake incoming webhook answers in the receivers' documented answers
// (test/documented/alert-webhook, quoted from Slack's and Mattermost's documentation: ../shared/fixtures
// has no folder for incoming webhooks), so the alert client's tests run against what the real receivers say.

const fakes: Awaited<ReturnType<typeof startFakeWebhook>>[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

async function post(url: string, body: string): Promise<{ status: number; contentType: string | null; body: string }> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
}

const ANSWERED = Object.keys(ANSWER_FILES) as Answer[];

test("every documented answer in test/documented/alert-webhook is one the fake gives, and no other", () => {
  const files = readdirSync(join(DOCUMENTED, "alert-webhook")).filter((name) => name !== "README.md");
  expect(Object.values(ANSWER_FILES).sort()).toEqual(files.sort());
  for (const answer of ANSWERED) expect(ANSWERS[answer], answer).toEqual(textFixture("alert-webhook", ANSWER_FILES[answer]));
  expect(ANSWERS.ok).toEqual({ status: 200, body: "ok" });
  expect(ANSWERS.noService).toEqual({ status: 404, body: "no_service" });
});

test("a JSON body with a string text is taken: 200 text/plain ok", async () => {
  const fake = await startFakeWebhook();
  fakes.push(fake);
  expect(await post(fake.url, JSON.stringify({ text: "hello" }))).toEqual({ status: 200, contentType: "text/plain", body: "ok" });
  expect(fake.delivered).toEqual(["hello"]);
});

test.each([["not json"], [JSON.stringify({ text: 5 })], [JSON.stringify({ blocks: [] })]])("%s is refused as Slack does: 400 invalid_payload", async (body) => {
  const fake = await startFakeWebhook();
  fakes.push(fake);
  expect(await post(fake.url, body)).toEqual({ status: 400, contentType: "text/plain", body: "invalid_payload" });
  expect(fake.delivered).toEqual([]);
});

test.each(ANSWERED.filter((k) => k !== "ok"))("told to answer %s, the fake answers its documented status and body", async (answer) => {
  const fake = await startFakeWebhook();
  fakes.push(fake);
  fake.answer(answer, "2");
  const res = await fetch(fake.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: "hello" }) });
  const documented = textFixture("alert-webhook", ANSWER_FILES[answer]);
  expect({ status: res.status, contentType: res.headers.get("content-type"), body: await res.text() }).toEqual({ ...documented, contentType: "text/plain" });
  expect(res.headers.get("retry-after")).toBe(answer === "rateLimited" ? "2" : null);
  expect(fake.delivered).toEqual([]);
});
