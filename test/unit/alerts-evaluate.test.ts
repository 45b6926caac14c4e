import { expect, test } from "vitest";
import type { Condition } from "../../src/core/alerts/conditions.ts";
import { createEvaluator } from "../../src/core/alerts/evaluate.ts";
import { createLogger } from "../../src/core/log.ts";
import { useTempDb } from "../helpers/db.ts";

/** The evaluator over the real alert store, through the async store contract. */

const ctx = useTempDb("bridge-alerts-evaluate-");

function evaluator(sources: (() => Promise<Condition[]>)[], now: () => number) {
  return createEvaluator({ store: ctx.store.alertStore, sources, log: createLogger("silent"), now, name: "bridge", recorded: () => {} });
}

const kinds = () => ctx.db.prepare("SELECT condition, kind FROM alerts ORDER BY id").all() as { condition: string; kind: string }[];
const LOW: Condition = { key: "balance:x", title: "Cast key x low on credit", text: "Cast key x low on credit: 1 credit left." };

test("two looks at once record a new condition's start once: the second waits for the first", async () => {
  const look = evaluator([async () => [LOW]], () => 1_000).look;
  await Promise.all([look(), look(), look()]);
  expect(kinds()).toEqual([{ condition: "balance:x", kind: "started" }]);
});

test("a source that throws ends none of the open conditions; the others are still looked at", async () => {
  let fails = false;
  let t = 1_000;
  const look = evaluator(
    [
      async () => {
        if (fails) throw new Error("database is locked");
        return [LOW];
      },
      async () => [{ key: "inbound:unrouted", title: "unrouted replies", text: "1 reply could not be routed." }],
    ],
    () => t,
  ).look;
  await look();
  fails = true;
  t += 60_000;
  expect(await look()).toEqual(["inbound:unrouted"]);
  expect(kinds()).toEqual([
    { condition: "balance:x", kind: "started" },
    { condition: "inbound:unrouted", kind: "started" },
  ]);
});

test("a condition that flaps is started once and ended once, and started again only once it lasts five minutes", async () => {
  let t = 1_000;
  let present = true;
  const look = evaluator([async () => (present ? [LOW] : [])], () => t).look;
  for (let i = 0; i < 8; i++) {
    await look();
    present = !present;
    t += 30_000;
  }
  expect(kinds()).toEqual([
    { condition: "balance:x", kind: "started" },
    { condition: "balance:x", kind: "ended" },
  ]);
  present = true;
  for (let i = 0; i < 10; i++, t += 30_000) await look(); // 4 min 30 s of it
  expect(kinds()).toHaveLength(2);
  await look();
  expect(kinds().map((k) => k.kind)).toEqual(["started", "ended", "started"]);
});
