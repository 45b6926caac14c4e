import { randomBytes } from "node:crypto";
import { AppError } from "../../errors.ts";
import { TEST_MESSAGE_PREFIX } from "../ids.ts";
import { optOutPhone } from "../operator/optouts.ts";
import type { SettingsCore } from "./settings.ts";

/** Test SMS a location may send in an hour: each costs credits and reaches a stranger's phone as easily as the admin's. */
export const TEST_SMS_PER_HOUR = 10;
const HOUR_MS = 3_600_000;

/**
 * A test SMS, queued as a message of the location: the webhook's path from the job table
 * on (opt-outs, sender ID, key, receipts), so it shows in the message log like any other,
 * `bridge messages list --location` too. At most TEST_SMS_PER_HOUR an hour, counted in the
 * job table inside the commit that adds it, so neither a restart nor two pages at once
 * let an eleventh through.
 */
export async function queueTestSms(core: SettingsCore, locationId: string, phone: unknown, text: unknown): Promise<{ message_id: string }> {
  const number = optOutPhone(phone);
  const message = typeof text === "string" && text.trim() ? text.slice(0, 480) : "Test message from the SMS settings page.";
  const messageId = `${TEST_MESSAGE_PREFIX}${randomBytes(9).toString("base64url")}`;
  const fresh = { messageId, locationId, contactId: "", phone: number, message, attachments: [] };
  const now = core.now();
  const waitMs = await core.jobs.enqueueLimited(fresh, now, { count: TEST_SMS_PER_HOUR, windowMs: HOUR_MS, prefix: TEST_MESSAGE_PREFIX });
  if (waitMs > 0) {
    const minutes = Math.ceil(waitMs / 60_000);
    throw new AppError("TOO_MANY", `at most ${TEST_SMS_PER_HOUR} test SMS an hour: try again in ${minutes} min`, { retryAfterMs: waitMs });
  }
  return { message_id: messageId };
}
