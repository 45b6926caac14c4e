import type { GatewayKey } from "../../store/types.ts";
import { keyTag } from "../key-tag.ts";
import { describeRemote, type Outage } from "../operator/outages.ts";
import { isLow } from "../operator/status.ts";
import type { WriteRefusal } from "./write-watch.ts";

/**
 * Something that needs a person, as one look finds it. `key` is stable while it lasts
 * (`hold:<key tag>`, `outage:cast`): an alert when it appears, one when it is gone.
 * The text says what is wrong and what to do (a command), and never holds a secret:
 * keys by their tag (key-tag.ts), phones by their device id.
 */
export interface Condition {
  key: string;
  /** A few words: what the "ended" alert names. */
  title: string;
  /** The whole alert: what, since when or how much, and what to do. */
  text: string;
  /** How long it must last before it is alerted (outages: a minute, as a blip needs no one). */
  graceMs?: number;
}

/**
 * One source of conditions: called at every look. Sources are a list (createRun's
 * `alertSources`), so a new one (a location at 80 % or 100 % of its monthly cap) is
 * one more entry, not a change here.
 */
export type ConditionSource = () => Condition[] | Promise<Condition[]>;

/** An outage waits this long before it is alerted: a blip of a minute needs no one. */
export const OUTAGE_GRACE_MS = 60_000;

/** HighLevel, Cast or a phone unreachable (operator/outages.ts knows them). */
export function outageConditions(outages: readonly Outage[]): Condition[] {
  return outages.map((o) => {
    const { name, waits } = describeRemote(o.remote);
    const phone = o.remote.startsWith("phone:");
    const title = phone ? `${name} not answering` : `${name} unreachable`;
    const todo = phone
      ? "check that the phone is on, online and running SMS Gateway for Android; `bridge status` lists what waits"
      : "`bridge status` shows the outage and what waits; nothing is lost, it all goes when it answers";
    return { key: `outage:${o.remote}`, title, text: `${title} (${o.kind}: ${o.reason}): ${waits}. ${capital(todo)}.`, graceMs: OUTAGE_GRACE_MS };
  });
}

/** Gateway keys Cast refused (delivery/holds.ts, recorded in gateway_keys): their messages wait. */
export function holdConditions(keys: readonly GatewayKey[], users: ReadonlyMap<string, string[]>): Condition[] {
  return keys.flatMap((k) => {
    if (k.heldSince === null) return [];
    const title = `Cast key ${k.keyTag} on hold (${holdWhy(k.heldStatus)})`;
    const text =
      `${title}: Cast refused it${k.heldReason ? ` ("${k.heldReason}")` : ""}; the messages of ${usedBy(users.get(k.keyTag))} wait. ` +
      "Top up or reactivate the Cast account, or give the location a working key: `bridge config set LOCATION --sms-api-key -` (SMS_API_KEY for the default key).";
    return [{ key: `hold:${k.keyTag}`, title, text }];
  });
}

/** Keys whose last balance read is below LOW_BALANCE_CREDITS (operator/balances.ts reads them). */
export function balanceConditions(keys: readonly GatewayKey[], users: ReadonlyMap<string, string[]>, lowCredits: number): Condition[] {
  return keys.flatMap((k) => {
    if (!isLow(k.balance, lowCredits)) return [];
    const title = `Cast key ${k.keyTag} low on credit`;
    const text = `${title}: ${k.balance} credits left, below LOW_BALANCE_CREDITS (${lowCredits}), used by ${usedBy(users.get(k.keyTag))}. Top up the Cast account before sending stops; \`bridge status\` shows the balances.`;
    return [{ key: `balance:${k.keyTag}`, title, text }];
  });
}

/** Locations waiting for the operator: approval, a reinstall, a key that cannot be opened (status.ts's needs_attention). */
export function attentionConditions(locations: readonly { location_id: string; reason: string }[]): Condition[] {
  return locations.flatMap(({ location_id: id, reason }) => {
    if (reason.startsWith("uninstalled")) return []; // an uninstall is the agency's own doing
    const pending = reason.startsWith("pending: not approved");
    const title = pending ? `location ${id} waiting for approval` : `location ${id} needs attention`;
    const todo = pending ? `Approve it once you know whose it is: \`bridge locations approve ${id}\`` : "`bridge status` lists it";
    return [{ key: `location:${id}`, title, text: `${capital(title)}: ${reason}. ${todo}.` }];
  });
}

/** Replies no location could be found for (the inbound room): they wait for the operator. */
export function unroutedConditions(unrouted: number): Condition[] {
  if (unrouted === 0) return [];
  const text =
    `${unrouted === 1 ? "1 reply" : `${unrouted} replies`} could not be routed to a location and ${unrouted === 1 ? "waits" : "wait"}. ` +
    "List them with `bridge messages list --status unrouted`, then `bridge messages route ID LOCATION` posts each to HighLevel.";
  return [{ key: "inbound:unrouted", title: "unrouted replies", text }];
}

/** The database refusing writes (the group commit's failure, write-watch.ts). */
export function writeConditions(refusal: WriteRefusal | undefined): Condition[] {
  if (!refusal) return [];
  const title = "the database refuses writes";
  const text = `${capital(title)} (${refusal.reason}): new messages are refused and sends wait. Free disk space or fix the permissions of DATABASE_PATH; \`bridge doctor\` checks the database.`;
  return [{ key: "database:write", title, text }];
}

/** A location's monthly cap and what it used this month, in SMS parts (the usage room's figures). */
export interface CapUse {
  locationId: string;
  cap: number;
  used: number;
}

/**
 * Locations at 80 % and at 100 % of their monthly cap: two conditions, so reaching 100 %
 * does not end the 80 % one; both end when the month turns or the cap is raised.
 */
export function capConditions(uses: readonly CapUse[]): Condition[] {
  return uses.flatMap(({ locationId: id, cap, used }) => {
    if (cap <= 0) return [];
    const raise = `raise it with \`bridge config set ${id} --monthly-cap PARTS\``;
    const found: Condition[] = [];
    if (used >= cap * 0.8) {
      const title = `location ${id} at 80 % of its monthly cap`;
      found.push({ key: `cap80:${id}`, title, text: `${capital(title)}: ${used} of ${cap} SMS parts used; at ${cap} its messages are refused. If that is too soon, ${raise}.` });
    }
    if (used >= cap) {
      const title = `location ${id} reached its monthly cap`;
      found.push({ key: `cap100:${id}`, title, text: `${capital(title)} of ${cap} SMS parts: its messages are refused until the month turns. To send more, ${raise}.` });
    }
    return found;
  });
}

/** Each key tag in use and who uses it, for the texts: "SMS_API_KEY" or location ids. */
export function usersByTag(users: ReadonlyMap<string, string[]>): Map<string, string[]> {
  return new Map([...users].map(([apiKey, who]) => [keyTag(apiKey), who]));
}

/** Cast's refusal, by its status (cast-answers.ts): 402 no credit, 403 the account, 401 the key. */
function holdWhy(status: number | null): string {
  if (status === 402) return "no credit";
  if (status === 403) return "account inactive or key refused";
  return "key refused";
}

function usedBy(users: string[] | undefined): string {
  if (!users || users.length === 0) return "its locations";
  const shown = users.slice(0, 5).map((u) => (u === "SMS_API_KEY" ? "SMS_API_KEY (the default key)" : `location ${u}`));
  return users.length > 5 ? `${shown.join(", ")} and ${users.length - 5} more` : shown.join(", ");
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
