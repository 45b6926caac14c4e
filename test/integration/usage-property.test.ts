import fc from "fast-check";
import { expect, test } from "vitest";
import { carrierCode, type FailureCode } from "../../src/db/failures.ts";
import { createInboundStore } from "../../src/db/inbound.ts";
import { createMessageLog } from "../../src/db/messages.ts";
import { monthIn } from "../../src/db/usage-month.ts";
import { createUsageStore } from "../../src/db/usage-store.ts";
import { outbound } from "../helpers/bridge.ts";
import { useTempDb } from "../helpers/db.ts";

/**
 * Usage is counted by the store as messages settle; here it is held to the message log
 * (what each message became, in the month of its send) over random sends, parts, outcomes,
 * operators' retries, caps and times on either side of a month's end in Manila.
 */

const ctx = useTempDb("bridge-usage-");
const monthOf = monthIn("Asia/Manila");
/** 1 April 2026, 00:00 in Manila. */
const BOUNDARY = Date.parse("2026-03-31T16:00:00Z");
const HOUR = 3_600_000;

/** What became of a message: refused before any send, refused by the gateway, or sent and then the carrier's word. */
const FATES = ["delivered", "opted_out", "invalid_phone", "gateway_rejected", "UNDELIV", "REJECTD", "FAILED", "delivery_unknown", "no_receipt"] as const;
type Fate = (typeof FATES)[number];
const REFUSED: readonly Fate[] = ["opted_out", "invalid_phone"];

const send = fc.record({
  location: fc.constantFrom("loc-a", "loc-b"),
  gateway: fc.constantFrom("cast", "android:dev-1"),
  parts: fc.integer({ min: 1, max: 4 }),
  at: fc.integer({ min: -36 * HOUR, max: 36 * HOUR }).map((d) => BOUNDARY + d),
  settleAfter: fc.integer({ min: 0, max: 30 * HOUR }),
  fate: fc.constantFrom(...FATES),
  giveUp: fc.boolean(),
  retried: fc.boolean(),
});
type Send = typeof send extends fc.Arbitrary<infer T> ? T : never;

interface Expected {
  messages: number;
  parts: number;
  replies: number;
  [column: string]: number;
}

test("usage matches the message log: random sends, parts, outcomes, retries, caps and month boundaries, and outlives pruning", () => {
  fc.assert(
    fc.property(fc.array(send, { maxLength: 25 }), fc.integer({ min: 0, max: 12 }), fc.array(fc.integer({ min: -36, max: 36 }), { maxLength: 4 }), (sends, cap, replies) => {
      ctx.db.exec("DELETE FROM usage; DELETE FROM usage_reserved; DELETE FROM jobs; DELETE FROM seen_messages; DELETE FROM inbound; DELETE FROM usage_caps; DELETE FROM tokens;");
      ctx.db.prepare("INSERT INTO tokens (location_id, access_token, refresh_token, expires_at, installed_at, updated_at) VALUES ('loc-b', '', '', 0, 0, 0)").run();
      const usage = createUsageStore(ctx.db);
      usage.setCap("loc-b", cap, 0);
      const expected = new Map<string, Expected>();
      model.cap = cap;
      model.used.clear();
      sends.forEach((s, i) => play(s, i, expected));
      replies.forEach((h, i) => reply(`reply-${i}`, BOUNDARY + h * HOUR, expected));
      const counted = byKey(usage.list({}));
      expect(counted).toEqual(Object.fromEntries(expected));
      // Every reservation was released as its message settled.
      expect(ctx.db.prepare("SELECT coalesce(sum(parts), 0) FROM usage_reserved").pluck().get()).toBe(0);
      ctx.jobs.prune(BOUNDARY + 1000 * HOUR, 10_000);
      expect(byKey(usage.list({}))).toEqual(counted);
    }),
    { numRuns: 40 },
  );
});

/** Plays one message through the job store as the worker would, and adds what it must count to `expected`. */
function play(s: Send, i: number, expected: Map<string, Expected>): void {
  const { jobs } = ctx;
  const messageId = `m-${i}`;
  expect(jobs.enqueue(outbound(messageId, { locationId: s.location }), s.at - 1000)).toBe(true);
  let id = jobs.get(messageId)!.id;
  const fate = once(id, s, s.at, s.fate, expected);
  if (!s.retried || fate === "capped") return;
  // An operator queues it again: what it counted is taken back, and it counts as it settles anew.
  const log = createMessageLog(ctx.db);
  const before = log.get(messageId)!;
  if (!log.requeue(before, s.at + s.settleAfter + 1, "operator")) return;
  take(expected, s, s.at, fate);
  id = jobs.get(messageId)!.id;
  once(id, s, s.at + s.settleAfter + 2 * HOUR, "delivered", expected);
}

/** One send of the job at `at`, settled `settleAfter` later; what it was counted as. */
function once(id: number, s: Send, at: number, fate: Fate, expected: Map<string, Expected>): Fate | "capped" {
  const { jobs } = ctx;
  const settleAt = at + s.settleAfter;
  if (REFUSED.includes(fate)) {
    jobs.recordResult(id, { outcome: "failed", errorCode: fate as FailureCode, errorMessage: "refused" }, at);
  } else {
    const claimed = jobs.claimForSending(id, at, { idempotencyKey: `k-${id}-${at}`, apiKeyTag: "tag", gateway: s.gateway, parts: s.parts });
    // The cap holds exactly: loc-b's send is refused when, and only when, its parts would pass it.
    const over = s.location === "loc-b" && (model.used.get(monthOf(at)) ?? 0) + s.parts > model.cap;
    expect(claimed).toBe(!over);
    if (!claimed) {
      expect(jobs.byId(id)).toMatchObject({ state: "reporting", errorCode: "monthly_cap" });
      jobs.reported(id, "failed", settleAt);
      add(expected, s, at, "capped");
      return "capped";
    }
    if (fate === "gateway_rejected") jobs.recordResult(id, { outcome: "failed", errorCode: fate, errorMessage: "no" }, at);
    else sent(id, s, at, fate);
  }
  if (s.giveUp) jobs.giveUp(id, settleAt, "HighLevel refused the report");
  else jobs.reported(id, fate === "delivered" || fate === "no_receipt" ? "delivered" : "failed", settleAt);
  add(expected, s, at, fate);
  return fate;
}

function sent(id: number, s: Send, at: number, fate: Fate): void {
  const { jobs } = ctx;
  jobs.recordResult(id, { outcome: "delivered", gatewayMessageId: `gw-${id}-${at}`, parts: s.parts }, at, { at, deadline: at + HOUR });
  if (fate === "delivered") jobs.recordReceipt(id, { outcome: "delivered", receipt: "DELIVRD" }, at + 1);
  else if (fate === "no_receipt") jobs.recordReceipt(id, { outcome: "delivered", receipt: "none" }, at + HOUR);
  else if (fate === "delivery_unknown") jobs.recordReceipt(id, { outcome: "failed", receipt: "UNKNOWN", errorCode: "delivery_unknown" }, at + 1);
  else jobs.recordReceipt(id, { outcome: "failed", receipt: fate, errorCode: carrierCode(fate), errorMessage: "carrier" }, at + 1);
}

function reply(inboundId: string, at: number, expected: Map<string, Expected>): void {
  const row = { inboundId, source: "android" as const, dedupeKey: inboundId, phone: "+639171234567", text: "hi", to: "", deviceId: "dev-1" };
  createInboundStore(ctx.db).insert({ ...row, receivedAt: "", receivedMs: at, sourceId: "", locationId: "loc-a", routedBy: "device", optOut: "", state: "queued" }, at);
  entry(expected, `loc-a|${monthOf(at)}|android`).replies += 1;
}

/** What the log says a message became, as usage's columns (docs/usage.md, "What is counted, and when"). */
const COLUMN: Record<Fate | "capped", string> = {
  delivered: "delivered",
  no_receipt: "delivered",
  opted_out: "refused_opt_out",
  capped: "refused_cap",
  invalid_phone: "failed_invalid",
  gateway_rejected: "failed_rejected",
  REJECTD: "failed_rejected",
  UNDELIV: "failed_undelivered",
  FAILED: "failed_undelivered",
  delivery_unknown: "failed_unknown",
};

/** Parts count when the gateway took the message, unless its receipt says it never left (Cast refunds FAILED). */
function billed(s: Send, fate: Fate | "capped"): number {
  return ["delivered", "no_receipt", "UNDELIV", "REJECTD", "delivery_unknown"].includes(fate) ? s.parts : 0;
}

function add(expected: Map<string, Expected>, s: Send, at: number, fate: Fate | "capped"): void {
  const row = entry(expected, `${s.location}|${monthOf(at)}|${s.gateway === "cast" || REFUSED.includes(fate as Fate) || fate === "capped" ? "cast" : "android"}`);
  row.messages += 1;
  row.parts += billed(s, fate);
  row[COLUMN[fate]] = (row[COLUMN[fate]] ?? 0) + 1;
  used(s, at, billed(s, fate));
}

/** loc-b's parts of the month of `at`, in the model, as its cap sees them. */
function used(s: Send, at: number, parts: number): void {
  if (s.location === "loc-b") model.used.set(monthOf(at), (model.used.get(monthOf(at)) ?? 0) + parts);
}

function take(expected: Map<string, Expected>, s: Send, at: number, fate: Fate): void {
  const key = `${s.location}|${monthOf(at)}|${s.gateway === "cast" || REFUSED.includes(fate) ? "cast" : "android"}`;
  const row = entry(expected, key);
  row.messages -= 1;
  row.parts -= billed(s, fate);
  row[COLUMN[fate]] = (row[COLUMN[fate]] ?? 0) - 1;
  used(s, at, -billed(s, fate));
}

/** loc-b's cap, and the parts each month of it has taken so far. */
const model = { cap: 0, used: new Map<string, number>() };

const COLUMNS = ["delivered", "failed_invalid", "failed_not_sent", "failed_rejected", "failed_undelivered", "failed_unknown", "refused_opt_out", "refused_cap"];

function entry(expected: Map<string, Expected>, key: string): Expected {
  let row = expected.get(key);
  if (!row) expected.set(key, (row = { messages: 0, parts: 0, replies: 0, ...Object.fromEntries(COLUMNS.map((c) => [c, 0])) }));
  return row;
}

function byKey(rows: ReturnType<ReturnType<typeof createUsageStore>["list"]>): Record<string, Expected> {
  return Object.fromEntries(
    rows.map(({ locationId, month, gateway, messages, parts, replies, ...rest }) => [
      `${locationId}|${month}|${gateway}`,
      { messages, parts, replies, ...Object.fromEntries(COLUMNS.map((c) => [c, rest[c as keyof typeof rest] as number])) },
    ]),
  );
}
