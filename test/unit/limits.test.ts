import { expect, test } from "vitest";
import { createGate } from "../../src/server/gate.ts";
import { createBodyBudget } from "../../src/server/body.ts";

test("a lease grows to cover what it is asked for, never past the total, and gives all back once", () => {
  const budget = createBodyBudget(100);
  const a = budget.lease();
  const b = budget.lease();
  expect(a.cover(60)).toBe(true);
  expect(a.cover(40)).toBe(true); // already covered: nothing more taken
  expect(budget.used).toBe(60);
  expect(b.cover(41)).toBe(false); // refused whole: nothing taken
  expect(budget.used).toBe(60);
  expect(b.cover(40)).toBe(true);
  expect(a.cover(61)).toBe(false);
  expect(budget.used).toBe(100);
  a.release();
  a.release();
  expect(budget.used).toBe(40);
  expect(a.cover(Number.NaN)).toBe(true); // an unreadable length takes nothing; the bytes are counted as they come
  b.release();
  expect(budget.used).toBe(0);
});

test("a gate lets `concurrent` in, queues `queue` more in order, and refuses the rest at once", async () => {
  const gate = createGate({ concurrent: 2, queue: 2, maxWaitMs: 60_000 });
  const order: number[] = [];
  const entries = Array.from({ length: 5 }, async (_, i) => {
    const leave = await gate.enter();
    if (leave) order.push(i);
    return leave;
  });
  expect(await entries[4]).toBeUndefined();
  expect({ inside: gate.inside, waiting: gate.waiting }).toEqual({ inside: 2, waiting: 2 });

  const first = await entries[0];
  first?.();
  first?.(); // leaving twice lets only one more in
  await entries[2];
  expect({ inside: gate.inside, waiting: gate.waiting }).toEqual({ inside: 2, waiting: 1 });
  (await entries[1])?.();
  (await entries[2])?.();
  (await entries[3])?.();
  expect(order).toEqual([0, 1, 2, 3]);
  expect({ inside: gate.inside, waiting: gate.waiting }).toEqual({ inside: 0, waiting: 0 });
});

test("a gate's waiter gives up after maxWaitMs and frees its place in the queue", async () => {
  const gate = createGate({ concurrent: 1, queue: 1, maxWaitMs: 20 });
  const leave = await gate.enter();
  expect(await gate.enter()).toBeUndefined(); // waited 20 ms, then refused
  expect(gate.waiting).toBe(0);
  leave?.();
  expect(await gate.enter()).toBeTypeOf("function");
});

test("a gate's per-client share: one client cannot fill it, and a freed place goes to the oldest waiter with room", async () => {
  const gate = createGate({ concurrent: 2, queue: 4, maxWaitMs: 60_000, shares: [{ concurrent: 1, queue: 2 }] });
  const order: string[] = [];
  const enter = (client: string) =>
    gate.enter([client]).then((leave) => {
      if (leave) order.push(client);
      return leave;
    });
  const a1 = enter("a");
  const a2 = enter("a");
  const a3 = enter("a");
  expect(await enter("a")).toBeUndefined(); // a's share of the queue is full
  expect({ inside: gate.inside, waiting: gate.waiting }).toEqual({ inside: 1, waiting: 2 });

  const b1 = await enter("b"); // a place is left for another client
  expect(b1).toBeTypeOf("function");
  const c1 = enter("c");
  expect({ inside: gate.inside, waiting: gate.waiting }).toEqual({ inside: 2, waiting: 3 });

  b1?.(); // a2 waited longest but a is at its share: c gets the place
  await c1;
  expect(order).toEqual(["a", "b", "c"]);
  (await a1)?.();
  await a2;
  expect(order).toEqual(["a", "b", "c", "a"]);
  (await c1)?.();
  (await a2)?.();
  (await a3)?.();
  expect({ inside: gate.inside, waiting: gate.waiting }).toEqual({ inside: 0, waiting: 0 });
});

test("a gate's second level of shares: clients of one network together have the network's share", async () => {
  const gate = createGate({
    concurrent: 4,
    queue: 8,
    maxWaitMs: 60_000,
    shares: [
      { concurrent: 1, queue: 2 },
      { concurrent: 2, queue: 3 },
    ],
  });
  const entered = [1, 2, 3].map((n) => gate.enter([`n1-c${n}`, "n1"]));
  const [c1, c2] = await Promise.all(entered.slice(0, 2));
  expect({ inside: gate.inside, waiting: gate.waiting }).toEqual({ inside: 2, waiting: 1 }); // c3 waits: n1 runs 2
  const more = [4, 5].map((n) => gate.enter([`n1-c${n}`, "n1"]));
  expect(await gate.enter(["n1-c6", "n1"])).toBeUndefined(); // n1's share of the queue (3) is full
  const other = await gate.enter(["n2-c1", "n2"]); // another network still gets in
  const anyone = await gate.enter(); // a holder naming no client is held by the whole only
  expect({ inside: gate.inside, waiting: gate.waiting }).toEqual({ inside: 4, waiting: 3 });

  c1?.(); // n1 is under its share again: its oldest waiter, c3, takes the place
  const c3 = await entered[2];
  expect(c3).toBeTypeOf("function");
  for (const leave of [c2, c3, other, anyone]) leave?.();
  for (const leave of await Promise.all(more)) leave?.();
  expect({ inside: gate.inside, waiting: gate.waiting }).toEqual({ inside: 0, waiting: 0 });
});
