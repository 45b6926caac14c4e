import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCastClient } from "../../src/core/clients/cast.ts";
import { createLogger } from "../../src/core/log.ts";
import { awaitReceipt, createReceiptBook, nextLook, type ReceiptDeps } from "../../src/core/delivery/receipts.ts";
import { createScheduler } from "../../src/core/delivery/scheduler.ts";
import { ms } from "../../src/db/ms.ts";
import { useTempDb } from "../helpers/db.ts";
import { outbound } from "../helpers/bridge.ts";
import { castError, LOGS, startFakeGateway, type FakeGateway, type Receipt } from "../helpers/fake-gateway.ts";
import { captureStream } from "../helpers/stream.ts";

/**
 * Every time the job table holds is whole milliseconds (its columns are STRICT INTEGER):
 * whatever arithmetic produced it, a fraction is rounded up on its way in, and NaN is
 * refused before it reaches SQLite.
 */

const ctx = useTempDb("bridge-ms-");

/** A time as arithmetic makes them: whole, fractional, or a quarter of something. */
const time = fc.oneof(
  fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
  fc.double({ min: 1_600_000_000_000, max: 1_900_000_000_000, noNaN: true }),
  fc.integer({ min: 0, max: 10_000_000 }).map((n) => 1_700_000_000_000 + n / 4),
);

const TIME_COLUMNS = ["next_attempt_at", "created_at", "updated_at", "first_sent_at", "receipt_deadline", "sent_at", "receipt_at", "reported_at"];

function storedTypes(id: number): string[] {
  const row = ctx.db.prepare<[number], Record<string, string>>(`SELECT ${TIME_COLUMNS.map((c) => `typeof(${c}) AS ${c}`).join(", ")} FROM jobs WHERE id = ?`).get(id)!;
  return Object.values(row).filter((type) => type !== "null");
}

test("ms(): whole milliseconds, rounded up; NaN and infinities refused", () => {
  expect([ms(5), ms(7500.25), ms(7500.75), ms(-0.5), ms(0)]).toEqual([5, 7501, 7501, -0, 0]);
  for (const bad of [Number.NaN, Infinity, -Infinity]) expect(() => ms(bad)).toThrow(/not a time in milliseconds/);
});

test("every write of the job store keeps whole milliseconds, whatever times it is given", () => {
  let n = 0;
  // One transaction a run: the store's own statements, without an fsync each.
  const run = ctx.db.transaction((t: number[]) => {
    const messageId = `m-${++n}`;
    const { jobs } = ctx;
    expect(jobs.enqueue(outbound(messageId), t[0]!)).toBe(true);
    const id = jobs.get(messageId)!.id;
    jobs.markHeld(id, "held", t[1]!, t[4]! / 3);
    jobs.wakeHeld(t[5]! / 7);
    expect(jobs.claimForSending(id, t[2]!, { idempotencyKey: `k-${n}`, apiKeyTag: "tag" })).toBe(true);
    jobs.sendLater(id, t[3]!, "unclear", t[4]!, { unclear: true });
    expect(jobs.claimForSending(id, t[5]!, { idempotencyKey: `k-${n}`, apiKeyTag: "tag" })).toBe(true);
    jobs.recordResult(id, { outcome: "delivered", gatewayMessageId: `cast-${n}` }, t[6]!, { at: t[7]!, deadline: t[8]! });
    jobs.receiptLater(id, t[9]!, t[10]!);
    jobs.recordReceipt(id, { outcome: "delivered", receipt: "DELIVRD" }, t[11]!);
    jobs.retryLater(id, t[0]! / 3, "403", t[1]! / 7);
    jobs.noteError(id, "boom", t[2]! / 9);
    jobs.reported(id, "delivered", t[3]! / 11);
    return storedTypes(id);
  });
  fc.assert(
    fc.property(fc.array(time, { minLength: 12, maxLength: 12 }), (t) => {
      expect(run(t).every((type) => type === "integer")).toBe(true);
    }),
    { numRuns: 200 },
  );
});

test("NaN is refused before it reaches the table", () => {
  ctx.jobs.enqueue(outbound("m-nan"), Date.now());
  const id = ctx.jobs.get("m-nan")!.id;
  expect(() => ctx.jobs.receiptLater(id, Number.NaN, Date.now())).toThrow(/not a time in milliseconds: NaN/);
  expect(() => ctx.jobs.retryLater(id, Date.now(), "x", Number.NaN)).toThrow(/not a time in milliseconds/);
});

test("the receipt schedule: the next look is whole ms, not before now, not past the deadline", () => {
  fc.assert(
    fc.property(time, fc.double({ min: 0, max: 3_600_000, noNaN: true }), fc.double({ min: 0, max: 7_200_000, noNaN: true }), fc.boolean(), fc.double({ min: 1, max: 10_000, noNaN: true }), (sentAt, since, wait, asking, firstMs) => {
      const now = sentAt + since;
      const deadline = sentAt + wait;
      const at = nextLook(now, sentAt, Math.max(deadline, now), asking, firstMs);
      expect(Number.isInteger(at)).toBe(true);
      expect(at).toBeGreaterThanOrEqual(now);
      expect(at).toBeLessThanOrEqual(ms(Math.max(deadline, now)));
    }),
    { numRuns: 2000 },
  );
});

describe("awaitReceipt through random times and answers", () => {
  let gateway: FakeGateway;
  beforeAll(async () => (gateway = await startFakeGateway()));
  afterAll(() => gateway.close());

  /** What Cast says at one look: a status call's answer (the log shows the same), or its log down. */
  const answer = fc.constantFrom<Receipt | "log down">(
    { status: "sent" },
    { status: "pending", dlr_status: "ACCEPTD" },
    { status: "delivered", dlr_status: "DELIVRD" },
    { status: "undelivered", dlr_status: "REJECTD" },
    { status: "undelivered", dlr_status: "EXPIRED" },
    { status: "failed", error_message: "route unavailable" },
    "log down",
  );
  /** One look: how long after the send (often 20-60 s, where a quarter is a fraction), and what Cast says. */
  const look = fc.record({ since: fc.oneof(fc.integer({ min: 20_001, max: 59_999 }), fc.double({ min: 0, max: 2_000_000, noNaN: true })), says: answer });

  test("every time it stores is whole milliseconds, and it never throws", async () => {
    const logs: string[] = [];
    const sms = createCastClient({ apiUrl: gateway.url, retries: 0 });
    const scheduler = createScheduler({ requestsPerSecond: 1e6, requestBurst: 1e6, messagesPerSecond: 1e6 });
    const log = createLogger("debug", captureStream(logs));
    let clock = 0;
    const now = () => clock;
    const book = createReceiptBook({ sms, scheduler, log, now, freshMs: 0, wake: (ids) => ctx.store.jobs.receiptsDue(ids, now()) });
    const deps: ReceiptDeps = { sms, receiptBook: book, jobs: ctx.store.jobs, scheduler, now, log };
    let n = 0;
    await fc.assert(
      fc.asyncProperty(time, fc.double({ min: 1, max: 10_000, noNaN: true }), fc.double({ min: 1, max: 3_600_000, noNaN: true }), fc.array(look, { minLength: 1, maxLength: 6 }), async (sentAt, pollMs, dlrWait, looks) => {
        const messageId = `m-${++n}`;
        clock = sentAt;
        const sent = await sendOne(sms, messageId);
        ctx.jobs.enqueue(outbound(messageId), clock);
        const id = ctx.jobs.get(messageId)!.id;
        ctx.jobs.claimForSending(id, clock, { idempotencyKey: messageId, apiKeyTag: "tag" });
        ctx.jobs.recordResult(id, { outcome: "delivered", gatewayMessageId: sent }, clock, { at: clock + pollMs, deadline: clock + dlrWait });
        for (const { since, says } of looks) {
          gateway.on(LOGS, says === "log down" ? () => castError(503, "SERVICE_UNAVAILABLE", "down") : gateway.own(LOGS));
          if (says !== "log down") gateway.receipts(() => says);
          clock = sentAt + since;
          const job = ctx.jobs.get(messageId)!;
          if (job.receiptDeadline === null) break;
          await awaitReceipt({ ...deps, receiptPollMs: pollMs }, job, KEY);
          expect(storedTypes(id).every((type) => type === "integer")).toBe(true);
        }
      }),
      { numRuns: 60 },
    );
    book.stop();
    expect(logs.join("")).not.toContain("[error]");
  });
});

const KEY = "cast_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

async function sendOne(sms: ReturnType<typeof createCastClient>, messageId: string): Promise<string> {
  const sent = await sms.send({ apiKey: KEY, to: "09171234567", message: messageId, senderId: "", idempotencyKey: messageId });
  return sent.messageId;
}
