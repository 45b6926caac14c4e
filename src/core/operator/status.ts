import type { GatewayKeys } from "../../store/contract.ts";
import type { InboundStore } from "../../store/contract.ts";
import type { PhoneStore } from "../../store/contract.ts";
import type { MessageLog } from "../../store/contract.ts";
import type { MessageStatus } from "../../store/types.ts";
import type { OptOutStore } from "../../store/contract.ts";
import type { OptOutBy } from "../../store/types.ts";
import type { OutageRecords } from "../../store/contract.ts";
import { MEND_SEALED } from "../../db/sealer.ts";
import type { LocationRegistry } from "../../store/contract.ts";
import type { Remote } from "../clients/observe.ts";
import { iso } from "../duration.ts";
import { sharedRefusal, unconfirmed } from "../installs/locations.ts";
import { describeRemote } from "./outages.ts";
import type { AlertStore, LeaseStore, ServerStore } from "../../store/contract.ts";
import type { ResolvedConfig } from "../config.ts";
import { alertChannel, type AlertChannelView } from "../alert-channel.ts";

/** `bridge status` and `GET /api/admin/status` (docs/cli.md, "Commands"; docs/http.md, "Endpoints"). Times are ISO 8601. */
export interface StatusView {
  generated_at: string;
  /** Messages of the log in each status. */
  queue: Record<MessageStatus, number>;
  /** Replies bridge took: posted to HighLevel, waiting for it, unrouted (for `bridge messages route`), and not posted. */
  inbound: { received: number; posted: number; waiting: number; unrouted: number; failed: number };
  /** Locations with messages still to send, the longest waiting first. */
  backlog: { location_id: string; waiting: number; oldest_received_at: string; oldest_wait_seconds: number }[];
  /** HighLevel, Cast.ph or a phone unreachable now, as serve last found it, and how many messages wait on each. */
  outages: OutageView[];
  /** Gateway keys Cast refused: their messages wait. */
  held_keys: { key: string; status: number | null; reason: string | null; since: string }[];
  /** Locations whose messages cannot be sent or reported until someone acts. */
  needs_attention: { location_id: string; reason: string }[];
  /** Each key's last balance read (at most a few minutes old when bridge status ran). */
  balances: { key: string; credits: number | null; checked_at: string | null; low: boolean; error: string | null }[];
  /** Numbers on the locations' opt-out lists together, by who put them there. */
  opt_outs: Record<OptOutBy, number>;
  /** Alerts to a person (ALERT_WEBHOOK_URL): configured or not, delivered, waiting, the last error. */
  alerts: AlertChannelView;
  /** The servers on this database by their heartbeats, the longest running first. */
  servers: { id: string; address: string; started_at: string; heartbeat_age_seconds: number }[];
  /** Who holds which lease now ("leader": the periodic work), until when, and the term's number. */
  leases: { name: string; holder: string; until: string; epoch: number }[];
}

export interface OutageView {
  /** "cast", "crm" or "phone:<device id>". */
  remote: string;
  /** "Cast.ph", "HighLevel" or "phone <device id>". */
  name: string;
  since: string;
  for_seconds: number;
  /** What kind of failure (timeout, refused, server_error, …) and what the last failed call met. */
  kind: string;
  reason: string;
  failed_calls: number;
  last_failed_at: string;
  /** Messages to send through Cast or the phone, or reports and replies to post to HighLevel. */
  waiting_messages: number;
}

export interface StatusDeps {
  messages: MessageLog;
  tokens: LocationRegistry;
  gatewayKeys: GatewayKeys;
  optOuts: Pick<OptOutStore, "counts">;
  replies: Pick<InboundStore, "counts">;
  /** What serve recorded of the outages it is living through. */
  outageRecords: Pick<OutageRecords, "list" | "waits">;
  /** Each location's gateway: one on a phone needs no Cast key. */
  phones?: Pick<PhoneStore, "describeAll">;
  /** ALLOWED_COMPANY_IDS: an approved location of another company may not use SMS_API_KEY. */
  allowedCompanyIds: readonly string[];
  /** LOW_BALANCE_CREDITS; 0: never low. */
  lowCredits: number;
  /** ALERT_WEBHOOK_URL, and the alerts serve recorded. */
  config: Pick<ResolvedConfig, "alertWebhookUrl">;
  alertStore: Pick<AlertStore, "health">;
  servers: Pick<ServerStore, "list">;
  leases: Pick<LeaseStore, "list">;
  now: number;
}

export async function bridgeStatus(deps: StatusDeps): Promise<StatusView> {
  const { now } = deps;
  const keys = await deps.gatewayKeys.list();
  return {
    generated_at: iso(now),
    queue: await deps.messages.counts(),
    inbound: await inboundCounts(deps.replies),
    backlog: (await deps.messages.backlog()).map((b) => ({
      location_id: b.locationId,
      waiting: b.waiting,
      oldest_received_at: iso(b.oldest),
      oldest_wait_seconds: Math.max(0, Math.round((now - b.oldest) / 1000)),
    })),
    outages: await outagesOf(deps.outageRecords, now),
    held_keys: keys.flatMap((k) =>
      k.heldSince === null ? [] : [{ key: k.keyMasked, status: k.heldStatus, reason: k.heldReason, since: iso(k.heldSince) }],
    ),
    needs_attention: await needsAttention(deps),
    balances: keys.flatMap((k) =>
      k.balanceAt === null
        ? []
        : [
            {
              key: k.keyMasked,
              credits: k.balance,
              checked_at: iso(k.balanceAt),
              low: isLow(k.balance, deps.lowCredits),
              error: k.balanceError,
            },
          ],
    ),
    opt_outs: await deps.optOuts.counts(),
    alerts: await alertChannel(deps.config, deps.alertStore),
    ...(await serversOf(deps)),
  };
}

/** The servers and the leases held, each age on the store's clock (the database's, on PostgreSQL). */
async function serversOf(deps: Pick<StatusDeps, "servers" | "leases">): Promise<Pick<StatusView, "servers" | "leases">> {
  const servers = (await deps.servers.list()).map((s) => ({
    id: s.id, address: s.address, started_at: iso(s.startedAt), heartbeat_age_seconds: Math.max(0, Math.round(s.ageMs / 1000)),
  }));
  const held = (await deps.leases.list()).filter((l) => l.leftMs > 0);
  return { servers, leases: held.map((l) => ({ name: l.name, holder: l.holder, until: iso(l.untilAt), epoch: l.epoch })) };
}

/** Locations whose messages cannot be sent or reported until someone acts, and why (status and alerts). */
export async function needsAttention(deps: { tokens: Pick<LocationRegistry, "listings">; phones?: StatusDeps["phones"]; allowedCompanyIds: readonly string[] }): Promise<StatusView["needs_attention"]> {
  // Every location's gateway in one read: serve's alerts ask this every 30 s.
  const gateways = await deps.phones?.describeAll();
  return (await deps.tokens.listings()).flatMap((l) => {
    if (l.uninstalledAt) return [{ location_id: l.locationId, reason: `uninstalled at ${l.uninstalledAt}: reinstall the app to send again` }];
    if (l.refreshError) return [{ location_id: l.locationId, reason: `needs a reinstall: ${l.refreshError}` }];
    if (l.smsApiKeyError) return [{ location_id: l.locationId, reason: `${l.smsApiKeyError}: its messages wait; ${MEND_SEALED}` }];
    if (l.smsApiKey || gateways?.get(l.locationId)?.gateway === "android") return [];
    if (!l.approved) return [{ location_id: l.locationId, reason: "pending: not approved to use SMS_API_KEY and has no key of its own" }];
    if (unconfirmed(l, deps.allowedCompanyIds)) {
      const reason = `pending: approved by a database upgrade, not by the operator, and it has no key of its own: confirm it with \`bridge locations approve ${l.locationId}\``;
      return [{ location_id: l.locationId, reason }];
    }
    if (sharedRefusal(l, deps.allowedCompanyIds)) {
      return [{ location_id: l.locationId, reason: `pending: its company ${l.companyId || "(none)"} is not in ALLOWED_COMPANY_IDS, and it has no key of its own` }];
    }
    return [];
  });
}

async function outagesOf(records: StatusDeps["outageRecords"], now: number): Promise<OutageView[]> {
  const outages = (await records.list()).filter((o): o is typeof o & { remote: Remote } => o.remote === "cast" || o.remote === "crm" || o.remote.startsWith("phone:"));
  return Promise.all(outages.map(async (o) => ({
      remote: o.remote,
      name: describeRemote(o.remote).name,
      since: iso(o.since),
      for_seconds: Math.max(0, Math.round((now - o.since) / 1000)),
      kind: o.kind,
      reason: o.reason,
      failed_calls: o.failedCalls,
      last_failed_at: iso(o.lastFailedAt),
      waiting_messages: await records.waits(o.remote),
    })));
}

async function inboundCounts(replies: StatusDeps["replies"]): Promise<StatusView["inbound"]> {
  const c = await replies.counts();
  const received = c.unrouted + c.queued + c.posting + c.done + c.dead;
  return { received, posted: c.done, waiting: c.queued + c.posting, unrouted: c.unrouted, failed: c.dead };
}

/** The gateway keys messages go out with now: the operator's, and each location's own. */
export async function apiKeysInUse(tokens: LocationRegistry, defaultKey: string): Promise<string[]> {
  return [...keyUsers(defaultKey, await tokens.listings()).keys()];
}

/**
 * Each gateway key in use and who uses it: SMS_API_KEY (as "SMS_API_KEY"), then the
 * installed locations' own keys (by location id), in the order given.
 */
export function keyUsers(
  defaultKey: string,
  locations: readonly { locationId: string; smsApiKey: string; uninstalledAt: unknown }[],
): Map<string, string[]> {
  const users = new Map<string, string[]>();
  if (defaultKey) users.set(defaultKey, ["SMS_API_KEY"]);
  for (const { locationId, smsApiKey, uninstalledAt } of locations) {
    if (smsApiKey && !uninstalledAt) users.set(smsApiKey, [...(users.get(smsApiKey) ?? []), locationId]);
  }
  return users;
}

/**
 * Whether `credits` is below LOW_BALANCE_CREDITS (`lowCredits`; 0: nothing is low): the
 * one rule behind the low-balance warning, `bridge status` and doctor. Here, not in
 * balances.ts, because the CLI loads this module without node:crypto.
 */
export function isLow(credits: number | null, lowCredits: number): boolean {
  return lowCredits > 0 && credits !== null && credits < lowCredits;
}
