import fc from "fast-check";
import { expect, test } from "vitest";
import { ms } from "../../src/db/ms.ts";
import { useTempDb } from "../helpers/db.ts";
import { outbound } from "../helpers/bridge.ts";

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
    jobs.markHeld(id, "held", t[1]!);
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
