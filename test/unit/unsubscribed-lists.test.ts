import { describe, expect, test } from "vitest";
import type { Unsubscribed } from "../../src/core/clients/cast-unsubscribed.ts";
import { createUnsubscribedLists, UNSUBSCRIBED_FRESH_MS, UNSUBSCRIBED_LOOK_MS, UNSUBSCRIBED_RETRY_MS } from "../../src/core/delivery/opt-out.ts";
import { createLogger } from "../../src/core/log.ts";
import { captureStream } from "../helpers/stream.ts";

/** Cast's unsubscribed lists as delivery reads them, over a `read` that answers what the test says. */
function setup(answer: (apiKey: string) => Unsubscribed[] | Error) {
  const lines: string[] = [];
  const reads: string[] = [];
  let t = 1_000_000;
  const lists = createUnsubscribedLists({
    read: async (apiKey) => {
      reads.push(apiKey);
      const got = answer(apiKey);
      if (got instanceof Error) throw got;
      return got;
    },
    log: createLogger("debug", captureStream(lines)),
    now: () => t,
  });
  return { lists, lines, reads, advance: (ms: number) => (t += ms) };
}

const LISTED: Unsubscribed[] = [
  { phone: "+639171234567", senderId: "MYAPP" },
  { phone: "09181234567", senderId: "OTHER" },
];

describe("who counts as unsubscribed", () => {
  test.each([
    { name: "the number, from the message's sender ID", sender: "MYAPP", phone: "09171234567", listed: true },
    { name: "the sender ID in another case", sender: "myapp", phone: "+639171234567", listed: true },
    { name: "the number, from another sender ID", sender: "OTHER", phone: "09171234567", listed: false },
    { name: "no sender ID (Cast's default): from any", sender: "", phone: "09171234567", listed: true },
    { name: "a number Cast wrote locally", sender: "OTHER", phone: "+63 918 123 4567", listed: true },
    { name: "a number not on the list", sender: "", phone: "09191234567", listed: false },
  ])("$name: $listed", async ({ sender, phone, listed }) => {
    const { lists } = setup(() => LISTED);
    expect(await lists.listed("key-1", sender, phone)).toBe(listed);
  });
});

describe("reading and keeping", () => {
  test("one read per key serves every send until it is 5 minutes old; sends at once share one read", async () => {
    const { lists, reads, advance } = setup(() => LISTED);
    await Promise.all([lists.listed("key-1", "MYAPP", "09171234567"), lists.listed("key-1", "", "09191234567")]);
    await lists.listed("key-2", "", "09171234567");
    expect(reads).toEqual(["key-1", "key-2"]);

    advance(UNSUBSCRIBED_FRESH_MS - 1);
    await lists.listed("key-1", "", "09171234567");
    expect(reads).toHaveLength(2);
    advance(1);
    await lists.listed("key-1", "", "09171234567");
    expect(reads).toEqual(["key-1", "key-2", "key-1"]);
  });

  test("a failed read stops no send, is warned once, tried again a minute later, and its end is said", async () => {
    let failing = true;
    const { lists, lines, reads, advance } = setup(() => (failing ? new Error("gateway unsubscribed call answered 500") : LISTED));
    expect(await lists.listed("key-1", "MYAPP", "09171234567")).toBe(false);
    expect(await lists.listed("key-1", "MYAPP", "09171234567")).toBe(false);
    expect(reads).toHaveLength(1);

    advance(UNSUBSCRIBED_RETRY_MS);
    expect(await lists.listed("key-1", "MYAPP", "09171234567")).toBe(false);
    expect(reads).toHaveLength(2);
    const failures = lines.filter((l) => l.includes("could not be read"));
    expect(failures).toHaveLength(2);
    expect(failures[0]).toMatch(/WARN/i);
    expect(failures[1]).not.toMatch(/WARN/i);
    expect(failures[0]).toContain("answered 500");

    failing = false;
    advance(UNSUBSCRIBED_RETRY_MS);
    expect(await lists.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(lines.filter((l) => l.includes("is read again"))).toHaveLength(1);
  });

  test("the key is masked in what is logged", async () => {
    const { lists, lines } = setup(() => new Error("refused"));
    await lists.listed("cast_0123456789abcdef0123456789abcdef", "", "09171234567");
    expect(lines.join("")).toContain("cast_0123456...");
    expect(lines.join("")).not.toContain("cast_0123456789abcdef");
  });
});

describe("Cast's per-address budget", () => {
  test("a read waits until the scheduler gives it a request, as a receipt poll does", async () => {
    const reads: string[] = [];
    const asked: number[] = [];
    // The budget says wait 5 ms twice, then go.
    const waits = [5, 5, 0];
    const lists = createUnsubscribedLists({
      read: async (apiKey) => (reads.push(apiKey), LISTED),
      tryRead: () => {
        const wait = waits.shift() ?? 0;
        asked.push(wait);
        return wait;
      },
      log: createLogger("debug", captureStream([])),
      now: () => 1_000_000,
    });
    expect(await lists.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(asked).toEqual([5, 5, 0]);
    expect(reads).toEqual(["key-1"]);
  });
});

describe("without waiting (check)", () => {
  test("a key's first read goes off the caller's path: meanwhile the ms to look again, then the list's word", async () => {
    let answer = (_: Unsubscribed[]) => {};
    const lists = createUnsubscribedLists({
      read: () => new Promise<Unsubscribed[]>((resolve) => (answer = resolve)),
      log: createLogger("debug", captureStream([])),
      now: () => 1_000_000,
    });
    expect(lists.check("key-1", "MYAPP", "09171234567")).toBe(UNSUBSCRIBED_LOOK_MS);
    expect(lists.check("key-1", "MYAPP", "09171234567")).toBe(UNSUBSCRIBED_LOOK_MS);
    answer(LISTED);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lists.check("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(lists.check("key-1", "MYAPP", "09191234567")).toBe(false);
  });
});
