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
  const turns = [0, 1, 2].map(() => order.enter("loc-a"));
  expect(await comeInOrder([2, 0, 1], turns)).toEqual([0, 1, 2]);
});

test("another location's line is its own; a job that ends without asking lets the next one on", async () => {
  const order = createSendOrder();
  const [a1, b1, a2] = [order.enter("loc-a"), order.enter("loc-b"), order.enter("loc-a")];
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
  const [first, second, third] = [order.enter("loc-a"), order.enter("loc-a"), order.enter("loc-a")];
  let thirdCame = false;
  void third.turn.then(() => (thirdCame = true));
  second.pass(); // the second ended early, while the first still reads the store
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(thirdCame).toBe(false);
  first.pass();
  await new Promise((resolve) => setTimeout(resolve, 5));
  expect(thirdCame).toBe(true);
});
