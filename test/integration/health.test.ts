import { describe, expect, test } from "vitest";
import { bridgePerTest } from "../helpers/bridge.ts";

// GET /healthz (the process answers) and GET /readyz (what is down), through real HTTP.

describe("health", () => {
  describe("with the worker running", () => {
    const start = bridgePerTest();

    test("GET /healthz: 200 {status: ok}", async () => {
      const bridge = await start();
      const res = await bridge.fetch("/healthz");
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: "ok" });
    });

    test("GET /readyz: 200", async () => {
      const bridge = await start();
      const res = await bridge.fetch("/readyz");
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ down: [] });
    });
  });

  describe("with the worker stopped", () => {
    const start = bridgePerTest();

    test("GET /healthz is still 200", async () => {
      const bridge = await start({ worker: false });
      const res = await bridge.fetch("/healthz");
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: "ok" });
    });

    test('GET /readyz: 503 naming "worker"', async () => {
      const bridge = await start({ worker: false });
      const res = await bridge.fetch("/readyz");
      expect(res.status).toBe(503);
      const body = (await res.json()) as { down: string[] };
      expect(body.down).toContain("worker");
      expect(body.down).not.toContain("database");
    });
  });
});
