import { afterEach, expect, test } from "vitest";
import { ANSWERS, startFakeWebhook, type Answer } from "../helpers/fake-webhook.ts";
import { documented } from "../helpers/fixtures.ts";

// The fake incoming webhook answers in the receivers' documented answers
// (test/documented/alert-webhook, quoted from Slack's and Mattermost's documentation), so the
// alert client's tests run against what the real receivers say.

const fakes: Awaited<ReturnType<typeof startFakeWebhook>>[] = [];
afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

async function post(url: string, body: string): Promise<{ status: number; contentType: string | null; body: string }> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
}

const DOCUMENTED = documented<Record<Answer, { status: number; contentType: string; body: string }>>("alert-webhook", "answers.json");

test("every documented answer is one the fake gives, as documented", () => {
  expect(ANSWERS).toEqual(DOCUMENTED);
  expect(Object.keys(DOCUMENTED).sort()).toEqual(["actionProhibited", "channelIsArchived", "channelNotFound", "invalidPayload", "noService", "ok", "rateLimited", "rollupError"]);
});

test("a JSON body with a string text is taken: 200 text/plain ok", async () => {
  const fake = await startFakeWebhook();
  fakes.push(fake);
  expect(await post(fake.url, JSON.stringify({ text: "hello" }))).toEqual({ status: 200, contentType: DOCUMENTED.ok.contentType, body: "ok" });
  expect(fake.delivered).toEqual(["hello"]);
});

test.each([["not json"], [JSON.stringify({ text: 5 })], [JSON.stringify({ blocks: [] })]])("%s is refused as Slack does: 400 invalid_payload", async (body) => {
  const fake = await startFakeWebhook();
  fakes.push(fake);
  expect(await post(fake.url, body)).toEqual({ status: 400, contentType: DOCUMENTED.invalidPayload.contentType, body: "invalid_payload" });
  expect(fake.delivered).toEqual([]);
});

test.each(Object.keys(DOCUMENTED).filter((k) => k !== "ok") as Answer[])("told to answer %s, the fake answers its documented status and body", async (answer) => {
  const fake = await startFakeWebhook();
  fakes.push(fake);
  fake.answer(answer, "2");
  const got = await post(fake.url, JSON.stringify({ text: "hello" }));
  expect(got).toEqual({ status: DOCUMENTED[answer].status, contentType: DOCUMENTED[answer].contentType, body: DOCUMENTED[answer].body });
  expect(fake.delivered).toEqual([]);
});
