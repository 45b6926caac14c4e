import { expect, test } from "vitest";
import { createSendOrder } from "../../src/core/delivery/send-order.ts";

/** The order in which `turns` come, as their holders ask for them in `asking` order. */
async function comeInOrder(asking: number[], turns: { turn: Promise<void>; pass: () => void }[]): Promise<number[]> {
  const came: number[] = [];
  await Promise.all(asking.map(async (i) => {
    await turns[i]!.turn;
    came.push(i);
    turns[i]!.pass();
  }));
  return came;
}

test("a location's jobs take their budgets in the order they started, whatever order they ask in", async () => {
  const order = createSendOrder();
  const turns = [0, 1, 2].map((i) => order.enter("loc-a", i));
  expect(await comeInOrder([2, 0, 1], turns)).toEqual([0, 1, 2]);
});

test("another location's line is its own; a job that ends without asking lets the next one on", async () => {
  const order = createSendOrder();
  const [a1, b1, a2] = [order.enter("loc-a", 1), order.enter("loc-b", 2), order.enter("loc-a", 3)];
  let b1Came = false;
  void b1.turn.then(() => (b1Came = true));
  await Promise.resolve();
  expect(b1Came).toBe(true); // loc-a's first job still holds its turn
  let a2Came = false;
  void a2.turn.then(() => (a2Came = true));
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(a2Came).toBe(false);
  a1.pass(); // ended (held, refused, threw) before its budgets
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(a2Came).toBe(true);
});

test("a job's turn waits for every job before it, even one that passed out of order", async () => {
  const order = createSendOrder();
  const [first, second, third] = [order.enter("loc-a", 1), order.enter("loc-a", 2), order.enter("loc-a", 3)];
  let thirdCame = false;
  void third.turn.then(() => (thirdCame = true));
  second.pass(); // the second ended early, while the first still reads the store
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(thirdCame).toBe(false);
  first.pass();
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(thirdCame).toBe(true);
});

test("a job told to wait for its budgets keeps its place: the location's later jobs take none until it has taken its own", async () => {
  let t = 1_000;
  const order = createSendOrder(() => t);
  const [first, second] = [order.enter("loc-a", 1), order.enter("loc-a", 2)];
  await first.turn;
  expect(first.ahead()).toBe(0);
  first.pass(1000); // the phone's pace: a second to wait
  await second.turn;
  t += 1500; // the second's reads ended after that second: the token is there, but the first's
  expect(second.ahead()).toBeGreaterThan(0);
  second.pass();
  expect(order.enter("loc-b", 3).ahead()).toBe(0); // another location's line is its own
  const again = order.enter("loc-a", 1);
  await again.turn;
  expect(again.ahead()).toBe(0);
  again.pass(0); // took its budgets
  const third = order.enter("loc-a", 2);
  await third.turn;
  expect(third.ahead()).toBe(0);
});

test("a place kept by a job that does not come back (another server sent it) is free a few seconds after its wait", async () => {
  let t = 1_000;
  const order = createSendOrder(() => t);
  order.enter("loc-a", 1).pass(200);
  const later = order.enter("loc-a", 2);
  await later.turn;
  t += 200 + 4_000;
  expect(later.ahead()).toBeGreaterThan(0);
  t += 1_000;
  expect(later.ahead()).toBe(0);
});
