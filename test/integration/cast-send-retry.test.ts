import { createServer, type Server } from "node:http";
import { expect, test } from "vitest";
import { createCastClient } from "../../src/core/clients/cast.ts";
import { GatewayError } from "../../src/errors.ts";
import { castError } from "../helpers/fake-gateway.ts";

test("a send retried after a refused connection keeps Cast's error_code in its final error", async () => {
  // A port nothing listens on yet: the first attempt is refused (never sent); Cast is
  // started on it when that attempt ends, so the retry meets its 403.
  const free = createServer();
  await new Promise<void>((resolve) => free.listen(0, "127.0.0.1", resolve));
  const port = (free.address() as { port: number }).port;
  await new Promise<void>((resolve) => free.close(() => resolve()));
  let cast: Server | undefined;
  const client = createCastClient({
    apiUrl: `http://127.0.0.1:${port}`,
    retryDelayMs: 300,
    observe: (call) => {
      if (cast || call.operation !== "send") return;
      const answer = castError(403, "IP_NOT_WHITELISTED", "IP address not whitelisted for this API key");
      cast = createServer(async (_, res) => {
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(await answer.clone().text());
      });
      cast.listen(port, "127.0.0.1");
    },
  });
  const error = await client
    .send({ apiKey: "k", to: "09171234567", message: "hi", senderId: "", idempotencyKey: "x" })
    .catch((e: unknown) => e);
  cast?.close();
  expect(error).toBeInstanceOf(GatewayError);
  expect((error as GatewayError).message).toMatch(/2 attempts/);
  expect((error as GatewayError).httpStatus).toBe(403);
  // The account, not the key: held, and probed by a send.
  expect((error as GatewayError).failure).toBe("account_held");
  // The code decides the hold's probe: a send, as a balance call passes for this refusal.
  expect((error as GatewayError).gatewayCode).toBe("IP_NOT_WHITELISTED");
});
