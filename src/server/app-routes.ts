import { getRouterParam, type H3 } from "h3";
import { balanceOf, phoneOf } from "../core/app/offers.ts";
import type { PageCalls } from "../core/app/page-calls.ts";
import { changeSettings, senderIdsOf, settingsOf, type SettingsCore } from "../core/app/settings.ts";
import { queueTestSms } from "../core/app/test-sms.ts";
import { usageOf } from "../core/app/usage.ts";
import type { Core } from "../core/index.ts";
import { isId } from "../core/ids.ts";
import { listMessages, messageNotFound, showMessage } from "../core/operator/messages.ts";
import { addOptOut, listOptOuts, removeOptOut } from "../core/operator/optouts.ts";
import { printable } from "../core/printable.ts";
import { clip, GatewayError } from "../errors.ts";
import { httpError } from "./http-error.ts";
import type { PageGuard } from "./app-session.ts";
import { parseJson, readLimitedBody } from "./body.ts";

export interface PageApiDeps {
  core: Core;
  guard: PageGuard;
  /** The page's calls at Cast and the phones: cached, at the lowest priority. */
  calls: PageCalls;
  /** Woken when a test SMS is queued. */
  notify: () => void;
}

/** What the page shows of its location's messages. */
const PAGE_MESSAGES = 50;

/**
 * The settings page's API (docs/http.md, "The settings page"): every call acts on the
 * session's own location, never on one the request names; writes need role "admin".
 */
export function pageApiRoutes(app: H3, { core, guard, calls, notify }: PageApiDeps): void {
  const page: SettingsCore = { ...core, calls };
  const { sessionOf, adminSessionOf } = guard;
  app.get("/app/api/settings", async (event) => settingsOf(page, (await sessionOf(event)).locationId));
  app.put("/app/api/settings", async (event) => {
    const { locationId } = await adminSessionOf(event);
    const body = objectBody(await readLimitedBody(event));
    // The phone's settings stay the operator's: they carry its password and signing key.
    const other = Object.keys(body).find((k) => k !== "sender_id" && k !== "sms_api_key");
    if (other !== undefined) throw httpError(400, "only sender_id and sms_api_key can be changed here");
    return fromGateway(() => changeSettings(page, locationId, body));
  });
  app.get("/app/api/sender-ids", (event) => fromGateway(async () => senderIdsOf(page, (await sessionOf(event)).locationId)));
  app.get("/app/api/balance", async (event) => balanceOf(page, (await sessionOf(event)).locationId));
  app.get("/app/api/usage", async (event) => usageOf(core, (await sessionOf(event)).locationId));
  app.get("/app/api/phone", async (event) => phoneOf(page, (await sessionOf(event)).locationId));
  app.post("/app/api/test-sms", async (event) => {
    const { locationId } = await adminSessionOf(event);
    const body = objectBody(await readLimitedBody(event));
    const queued = await queueTestSms(page, locationId, body.phone, body.message);
    notify();
    return queued;
  });
  messageRoutes(app, core, guard);
  optOutRoutes(app, core, guard);
}

function messageRoutes(app: H3, core: Core, { sessionOf }: PageGuard): void {
  app.get("/app/api/messages", async (event) => {
    const { locationId } = await sessionOf(event);
    return { messages: (await listMessages(core.messages, { locationId, limit: PAGE_MESSAGES })).messages };
  });
  app.get("/app/api/messages/:messageId", async (event) => {
    const { locationId } = await sessionOf(event);
    let messageId = "";
    try {
      messageId = decodeURIComponent(getRouterParam(event, "messageId") ?? "");
    } catch {
      // A malformed escape (`%E0%A4%A`) is a bad id like any other.
    }
    if (!isId(messageId)) throw httpError(400, "invalid message id");
    const message = await showMessage(core.messages, messageId);
    // Another location's message is as unknown here as one that never was.
    if (message.location_id !== locationId) throw messageNotFound(messageId);
    return message;
  });
}

function optOutRoutes(app: H3, core: Core, { sessionOf, adminSessionOf }: PageGuard): void {
  app.get("/app/api/optouts", async (event) => listOptOuts(core, (await sessionOf(event)).locationId));
  app.post("/app/api/optouts", async (event) => {
    const { locationId } = await adminSessionOf(event);
    // Recorded as the location admin's, apart from the operator's (`bridge optouts add`).
    return addOptOut(core, locationId, objectBody(await readLimitedBody(event)).phone, core.now(), "page");
  });
  app.delete("/app/api/optouts", async (event) => {
    const { locationId } = await adminSessionOf(event);
    return removeOptOut(core, locationId, objectBody(await readLimitedBody(event)).phone);
  });
}

function objectBody(bytes: Uint8Array): Record<string, unknown> {
  const body = parseJson(bytes);
  if (!body || typeof body !== "object" || Array.isArray(body)) throw httpError(400, "the body must be a JSON object");
  return body as Record<string, unknown>;
}

/** Cast's refusal or silence is the gateway's answer, not ours: a 502 that says what Cast said. */
async function fromGateway<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof GatewayError) throw httpError(502, `the SMS gateway answered: ${printable(clip(error.message, 200))}`);
    throw error;
  }
}
