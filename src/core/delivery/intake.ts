import type { KeyObject } from "node:crypto";
import { z } from "zod";
import type { JobStore } from "../../store/contract.ts";
import type { OutboundMessage } from "../../store/types.ts";
import { errorMessage } from "../../errors.ts";
import { ID_PATTERN, ID_RULE } from "../ids.ts";
import { SIGNATURE_HEADERS, verifyWebhook } from "../signature.ts";
import { createAppEvents, type AppEventDeps } from "./app-events.ts";
import { badWebhook, notStored, type IntakeAnswer } from "./webhook-answers.ts";

export { SIGNATURE_HEADERS };

export interface IntakeDeps extends AppEventDeps {
  jobs: Pick<JobStore, "enqueue">;
  now: () => number;
  webhookKeys: KeyObject[];
  /** A new job was committed: wake the queue. */
  notify?: () => void;
}

export type { IntakeAnswer };

export type Intake = ReturnType<typeof createIntake>;

// A missing, empty or malformed id is refused alike: nothing that is not an id reaches a URL or a log.
const id = z.string().trim().regex(ID_PATTERN, ID_RULE);

/**
 * HighLevel's ProviderOutboundMessage, the fields bridge uses. Only a missing (or
 * unusable) id or phone is refused here (docs/http.md, "The webhook"); a bad number or a text too
 * long for the gateway is accepted and reported `failed`, so the CRM shows why.
 * The 256 KiB body limit bounds the rest.
 */
const outboundSchema = z.object({
  type: z.literal("SMS"),
  locationId: id,
  messageId: id,
  phone: z.string().trim().min(1),
  message: z.string().nullish().transform((text) => text ?? ""),
  contactId: z.union([id, z.literal("")]).nullish().transform((contact) => contact ?? ""),
  attachments: z.array(z.string()).nullish().transform((urls) => urls ?? []),
});

const eventSchema = z.object({ type: z.string() });

/**
 * What arrives at the webhook URL (docs/http.md, "The webhook"), once its bytes are read: verify,
 * then commit the job, then answer. An answer means the message is on disk; a
 * refusal to store it is a NOT_STORED error (429: HighLevel sends it again).
 */
export function createIntake(deps: IntakeDeps) {
  const { log } = deps;

  async function accept(message: OutboundMessage, alone: boolean): Promise<IntakeAnswer> {
    let fresh: boolean;
    try {
      // With no other webhook on its way, nothing would join the batch: commit now.
      fresh = await deps.jobs.enqueue(message, deps.now(), alone);
    } catch (error) {
      log.error(`could not store message ${message.messageId}: ${errorMessage(error)}`);
      throw notStored("could not store the message");
    }
    if (fresh) deps.notify?.();
    else log.info(`message ${message.messageId} already accepted; not queued again`);
    return { status: "accepted" };
  }

  const appEvents = createAppEvents(deps);

  return {
    /** Whether any configured key signed `raw` (one of the SIGNATURE_HEADERS' values); logged when none did. */
    async verify(raw: Uint8Array, signatures: (string | null)[]): Promise<boolean> {
      if (await verifyWebhook(raw, signatures, deps.webhookKeys)) return true;
      log.warn(`webhook refused: invalid or missing signature`);
      return false;
    },
    /**
     * A verified webhook's JSON body. `alone`: no other webhook is on its way, so its
     * job commits at once instead of waiting for others to share the commit.
     */
    async receive(body: unknown, alone: boolean): Promise<IntakeAnswer> {
      const kind = eventSchema.safeParse(body);
      if (!kind.success) throw badWebhook("webhook body must be a JSON object with a string 'type'");
      switch (kind.data.type) {
        case "SMS":
          return accept(readOutbound(body), alone);
        case "INSTALL":
          return appEvents.install(body);
        case "UNINSTALL":
          return appEvents.uninstall(body);
        default:
          log.debug(`webhook of type ${JSON.stringify(kind.data.type.slice(0, 100))} ignored`);
          return { status: "ignored" };
      }
    },
  };
}

function readOutbound(body: unknown): OutboundMessage {
  const parsed = outboundSchema.safeParse(body);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((i) => i.path.join(".")))].join(", ");
    throw badWebhook(`invalid outbound message: missing or invalid ${fields}`);
  }
  const { locationId, messageId, phone, message, contactId, attachments } = parsed.data;
  return { locationId, messageId, phone, message, contactId, attachments };
}
