import { describe, expect, test } from "vitest";
import type { Unsubscribed } from "../../src/core/clients/cast-unsubscribed.ts";
import { createUnsubscribedLists, UNSUBSCRIBED_FRESH_MS, UNSUBSCRIBED_LOOK_MS, UNSUBSCRIBED_RETRY_MS } from "../../src/core/delivery/unsubscribed.ts";
import { createLogger } from "../../src/core/log.ts";
import type { UnsubscribedStore } from "../../src/store/contract.ts";
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

describe("servers sharing a store", () => {
  const settle = () => new Promise((resolve) => setTimeout(resolve, 5));
  /** Servers' lists over one store and one claim per key (a lease), on the test's clock. */
  function servers() {
    let t = 1_000_000;
    const rows = new Map<string, { entries: Unsubscribed[] | null; at: number }>();
    const store: UnsubscribedStore = {
      get: async (tag) => {
        const row = rows.get(tag);
        return row && { entries: row.entries, ageMs: t - row.at };
      },
      put: async (tag, entries) => void rows.set(tag, { entries, at: t }),
      prune: async (olderThanMs) => [...rows].filter(([tag, row]) => row.at < t - olderThanMs && rows.delete(tag)).length,
    };
    const claims = new Map<string, string>();
    const reads: string[] = [];
    const lines: string[] = [];
    let answer: () => Promise<Unsubscribed[]> = async () => LISTED;
    const server = (name: string) =>
      createUnsubscribedLists({
        read: async () => (reads.push(name), answer()),
        log: createLogger("debug", captureStream(lines)),
        now: () => t,
        shared: {
          store,
          tagOf: (apiKey) => `tag-${apiKey}`,
          claim: async (apiKey) => (claims.get(apiKey) ?? name) === name && Boolean(claims.set(apiKey, name)),
          release: async (apiKey) => void (claims.get(apiKey) === name && claims.delete(apiKey)),
        },
      });
    /** `ms` later, a send of the server looks (its look goes off the send's path), then one more: what that one is told. */
    const lookAfter = async (lists: ReturnType<typeof server>, ms: number) => {
      t += ms;
      lists.check("key-1", "MYAPP", "09171234567");
      await settle();
      return lists.check("key-1", "MYAPP", "09171234567");
    };
    return { server, reads, lines, claims, lookAfter, advance: (ms: number) => (t += ms), answer: (next: () => Promise<Unsubscribed[]>) => (answer = next) };
  }

  test("a key's list is read by one server, which stores it; another server's sends wait for that copy, then check it", async () => {
    const { server, reads, lookAfter, answer } = servers();
    let finish = () => {};
    answer(() => new Promise((resolve) => (finish = () => resolve(LISTED))));
    const [first, second] = [server("first"), server("second")];
    expect(first.check("key-1", "MYAPP", "09171234567")).toBe(UNSUBSCRIBED_LOOK_MS);
    await settle();
    expect(second.check("key-1", "MYAPP", "09171234567")).toBe(UNSUBSCRIBED_LOOK_MS);
    await settle();
    expect(reads).toEqual(["first"]);

    finish();
    await settle();
    expect(first.check("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(await lookAfter(second, 1_000)).toBe(true);
    expect(second.check("key-1", "MYAPP", "09191234567")).toBe(false);
    expect(reads).toEqual(["first"]);
  });

  test("a stored copy still fresh serves a server started anew without a read", async () => {
    const { server, reads, advance } = servers();
    expect(await server("first").listed("key-1", "MYAPP", "09171234567")).toBe(true);
    advance(UNSUBSCRIBED_FRESH_MS - 1_000);
    const restarted = server("restarted");
    expect(await restarted.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(reads).toEqual(["first"]);
    advance(1_000);
    expect(await restarted.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(reads).toEqual(["first", "restarted"]);
  });

  test("a copy past its 5 minutes is read again once, by the first server to need it; the others take the new copy", async () => {
    const { server, reads, advance, claims } = servers();
    const [first, second] = [server("first"), server("second")];
    expect(await first.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(await second.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    advance(UNSUBSCRIBED_FRESH_MS);
    expect(await second.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(await first.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(reads).toEqual(["first", "second"]);
    expect(claims.size).toBe(0); // each read's claim let go once it was stored
  });

  test("while another server reads a due list, a server's sends keep the last copy", async () => {
    const { server, reads, advance, answer, claims } = servers();
    const [first, second] = [server("first"), server("second")];
    expect(await first.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    advance(UNSUBSCRIBED_FRESH_MS);
    claims.set("key-1", "first"); // the first server is reading it again
    answer(async () => []);
    expect(await second.listed("key-1", "MYAPP", "09171234567")).toBe(true);
    expect(reads).toEqual(["first"]);
  });

  test("a failed read is stored: another server's sends go without the list, and only the reader warns", async () => {
    const { server, reads, lines, answer } = servers();
    answer(async () => Promise.reject(new Error("gateway unsubscribed call answered 500")));
    const [first, second] = [server("first"), server("second")];
    expect(await first.listed("key-1", "MYAPP", "09171234567")).toBe(false);
    expect(await second.listed("key-1", "MYAPP", "09171234567")).toBe(false);
    expect(second.check("key-1", "MYAPP", "09171234567")).toBe(false);
    expect(reads).toEqual(["first"]);
    expect(lines.filter((l) => l.includes("could not be read"))).toHaveLength(1);
  });

  test("a key whose read another server holds and has stored nothing for: its sends wait a minute at most, then go without it, warned once", async () => {
    const { server, reads, lines, lookAfter, claims } = servers();
    claims.set("key-1", "a server that stopped mid-read");
    const second = server("second");
    expect(second.check("key-1", "MYAPP", "09171234567")).toBe(UNSUBSCRIBED_LOOK_MS);
    await settle();
    expect(await lookAfter(second, UNSUBSCRIBED_RETRY_MS - 1)).toBe(UNSUBSCRIBED_LOOK_MS);
    expect(await lookAfter(second, 1_000)).toBe(false);
    await lookAfter(second, 1_000);
    expect(reads).toEqual([]);
    expect(lines.filter((l) => l.includes("has not been stored by the server reading it"))).toHaveLength(1);
  });
});
