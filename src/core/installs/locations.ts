import type { LocationRegistry, UsageStore } from "../../store/contract.ts";
import type { LocationListing, TokenRecord } from "../../store/types.ts";
import { notFound } from "../../errors.ts";
import { maskSecret } from "../mask.ts";
import { withoutControls } from "../printable.ts";
import type { PhoneStore } from "../../store/contract.ts";
import { phoneView, type PhoneView } from "./phone-view.ts";

/** A location as the admin API and `bridge locations list` show it: never a token, the API key masked. */
export interface LocationView {
  location_id: string;
  name: string;
  company_id: string;
  sender_id: string;
  sms_api_key: string;
  expires_at: string;
  installed_at: string;
  updated_at: string;
  refresh_error: string;
  approved: boolean;
  /** Approved, yet ALLOWED_COMPANY_IDS keeps it from the operator's key and sender ID. */
  off_list: boolean;
  /**
   * Approved by the schema upgrade, not by an operator: without ALLOWED_COMPANY_IDS it may
   * not use the operator's key and sender ID until `bridge locations approve` confirms it.
   */
  unconfirmed: boolean;
  uninstalled_at: string | null;
}

/** A listed location with its gateway and phone (phone-view.ts), when the caller reads them. */
export type LocationListed = LocationView & Partial<PhoneView>;

export interface LocationConfig extends Partial<PhoneView> {
  location_id: string;
  sender_id: string;
  sms_api_key: string;
}

/** The operator's SMS_API_KEY and SMS_SENDER_ID, and ALLOWED_COMPANY_IDS, the companies they may serve. */
export interface SharedSending {
  apiKey: string;
  senderId: string;
  allowedCompanyIds: readonly string[];
}

/**
 * The API key and sender ID a location's messages go with: its own, else the operator's
 * (SMS_API_KEY, SMS_SENDER_ID), which serve only the locations `sharedRefusal` lets in
 * (docs/configuration.md, "Who may use your gateway key"):
 * whoever can authorize the app must not send on the operator's account and brand.
 * "" : none. The one rule outbound sends by and doctor checks.
 */
export function sendingWith(record: SharedGate & Pick<TokenRecord, "smsApiKey" | "senderId">, shared: SharedSending) {
  const defaults = sharedRefusal(record, shared.allowedCompanyIds) ? { apiKey: "", senderId: "" } : shared;
  return { apiKey: record.smsApiKey || defaults.apiKey, senderId: record.senderId || defaults.senderId };
}

type SharedGate = Pick<TokenRecord, "locationId" | "approved" | "approvedBy" | "companyId">;

/**
 * Why a location may not use the operator's key and sender ID ("location X …"); undefined:
 * it may. It must be approved and, while ALLOWED_COMPANY_IDS is set, of a listed company,
 * checked at every send: taking a company off the list withdraws it at the next message.
 * The list is the gate for every approval, whoever gave it. Without a list, approvals
 * decide, except the ones schema 2 gave every location stored before approvals existed
 * (strangers' installs included): those wait for an operator's confirmation.
 */
export function sharedRefusal(record: SharedGate, allowedCompanyIds: readonly string[]): string | undefined {
  if (!record.approved) return "is not approved to use the shared gateway key";
  if (allowedCompanyIds.length === 0) return unconfirmed(record, allowedCompanyIds) ? unconfirmedRefusal(record.locationId) : undefined;
  if (allowedCompanyIds.includes(record.companyId)) return undefined;
  return `belongs to company ${record.companyId || "(none)"}, which is not in ALLOWED_COMPANY_IDS: it may not use the shared gateway key`;
}

/**
 * An approval the schema upgrade gave, which (without a list) counts only once an
 * operator's approve confirms it; with a list, the list decides for it as for any other.
 */
export function unconfirmed(record: Pick<SharedGate, "approved" | "approvedBy">, allowedCompanyIds: readonly string[]): boolean {
  return record.approved && record.approvedBy === "unconfirmed" && allowedCompanyIds.length === 0;
}

/**
 * Approved locations the list keeps from the operator's key: what `serve` warns about
 * at start and doctor names. None without a list.
 */
export async function approvedOffList(tokens: LocationRegistry, allowedCompanyIds: readonly string[]): Promise<LocationListing[]> {
  return (await tokens.listings()).filter((l) => !l.uninstalledAt && offList(l, allowedCompanyIds));
}

/**
 * Without a list, the locations whose approval came from the schema upgrade: pending
 * until an operator confirms them. What `serve` warns about at start and doctor names.
 */
export async function unconfirmedApprovals(tokens: LocationRegistry, allowedCompanyIds: readonly string[]): Promise<LocationListing[]> {
  return (await tokens.listings()).filter((l) => !l.uninstalledAt && unconfirmed(l, allowedCompanyIds));
}

/** The warning `serve` logs and doctor shows for `unconfirmedApprovals`' locations: the exact command to confirm them. */
export function unconfirmedWarning(locations: readonly LocationListing[]): string {
  const shown = locations.slice(0, 10);
  const named = shown.map((l) => `${l.locationId} (company ${l.companyId || "(none)"})`);
  const more = locations.length > 10 ? ` and ${locations.length - 10} more (\`bridge locations list\` shows them as unconfirmed)` : "";
  return (
    `${locations.length} location(s) approved by a database upgrade, not by the operator: ${named.join(", ")}${more}; ` +
    "without ALLOWED_COMPANY_IDS they may not use SMS_API_KEY or SMS_SENDER_ID until confirmed (their messages are reported failed): " +
    `confirm the ones you know with \`bridge locations approve ${shown.map((l) => l.locationId).join(" ")}\`, ` +
    "`bridge locations unapprove` the others"
  );
}

/**
 * Names are cleaned of control characters as they come in from HighLevel; one stored by
 * an older bridge may still hold them, so `serve` cleans those at start. Returns how many
 * it cleaned. A name of nothing but controls stays as stored: every output escapes it.
 */
export async function cleanStoredNames(tokens: LocationRegistry): Promise<number> {
  let cleaned = 0;
  for (const { locationId, name } of await tokens.listings()) {
    const clean = withoutControls(name);
    if (clean === name || !clean) continue;
    await tokens.setName(locationId, clean);
    cleaned++;
  }
  return cleaned;
}

/** The warning `serve` logs and doctor shows for `approvedOffList`'s locations. */
export function offListWarning(locations: readonly LocationListing[]): string {
  const named = locations.slice(0, 10).map((l) => `${l.locationId} (company ${l.companyId || "(none)"})`);
  const more = locations.length > 10 ? ` and ${locations.length - 10} more` : "";
  return (
    `${locations.length} approved location(s) of companies not in ALLOWED_COMPANY_IDS: ${named.join(", ")}${more}; ` +
    "they may not use SMS_API_KEY or SMS_SENDER_ID (their messages are reported failed): " +
    "`bridge locations unapprove` the ones you do not know, or add their company to ALLOWED_COMPANY_IDS"
  );
}

/** With `phones`, each location's gateway and phone settings too (secrets only as "(set)"). */
export async function listLocations(tokens: LocationRegistry, allowedCompanyIds: readonly string[], phones?: PhoneStore): Promise<LocationListed[]> {
  // One read of every location's gateway, not one per location: the listing is a command's start-up.
  const gateways = await phones?.describeAll();
  return (await tokens.listings()).map((l) => ({ ...view(l, allowedCompanyIds), ...(gateways && phoneView(gateways.get(l.locationId))) }));
}

function view(l: LocationListing, allowedCompanyIds: readonly string[]): LocationView {
  return {
    location_id: l.locationId,
    name: l.name,
    company_id: l.companyId,
    sender_id: l.senderId,
    // Not "": that would read as "no key of its own" (bridge status says why).
    sms_api_key: l.smsApiKeyError ? "(cannot be opened)" : maskSecret(l.smsApiKey),
    expires_at: l.expiresAt,
    installed_at: l.installedAt,
    updated_at: l.updatedAt,
    refresh_error: l.refreshError,
    approved: l.approved,
    off_list: offList(l, allowedCompanyIds),
    unconfirmed: unconfirmed(l, allowedCompanyIds),
    uninstalled_at: l.uninstalledAt,
  };
}

/** What an approve or unapprove answers: `off_list`, the approval does not count (see LocationView). */
export interface ApprovalChange {
  location_id: string;
  approved: boolean;
  off_list: boolean;
}

/**
 * Lets a pending location use the global SMS_API_KEY and SMS_SENDER_ID
 * (docs/configuration.md, "Who may use your gateway key"),
 * or withdraws that for good (no reinstall approves it again): the one code path of
 * `bridge locations approve|unapprove` and `POST …/approve|unapprove`. With
 * ALLOWED_COMPANY_IDS set, an approval counts only for a listed company (`sharedRefusal`).
 */
export async function setApproval(
  tokens: LocationRegistry,
  locationId: string,
  approved: boolean,
  now: number,
  allowedCompanyIds: readonly string[],
): Promise<ApprovalChange> {
  if (!(await tokens.setApproved(locationId, approved, now))) throw notFound(locationId);
  const companyId = (await tokens.companyOf(locationId)) ?? "";
  return { location_id: locationId, approved, off_list: offList({ approved, companyId }, allowedCompanyIds) };
}

/** Deletes a location's record (token, settings); its messages stay in the log. */
export async function removeLocation(tokens: LocationRegistry, locationId: string): Promise<void> {
  if (!(await tokens.delete(locationId))) throw notFound(locationId);
}

/** With `phones`, its gateway and phone settings too (secrets only as "(set)"). */
export async function getLocationConfig(tokens: LocationRegistry, locationId: string, phones?: PhoneStore): Promise<LocationConfig> {
  const record = await tokens.get(locationId);
  if (!record) throw notFound(locationId);
  return { ...configView(record), ...(phones && phoneView(await phones.describe(locationId))) };
}

function configView(record: TokenRecord): LocationConfig {
  return { location_id: record.locationId, sender_id: record.senderId, sms_api_key: maskSecret(record.smsApiKey) };
}

function unconfirmedRefusal(locationId: string): string {
  return `was approved by a database upgrade, not by the operator: it may not use the shared gateway key until confirmed with \`bridge locations approve ${locationId}\``;
}

/** Approved, but of a company the list leaves out. */
function offList(record: Pick<SharedGate, "approved" | "companyId">, allowedCompanyIds: readonly string[]): boolean {
  return record.approved && allowedCompanyIds.length > 0 && !allowedCompanyIds.includes(record.companyId);
}

/** The caps a location's configuration sets and shows. */
export type Caps = Pick<UsageStore, "capOf" | "setCap">;

/** A location's configuration with its monthly cap (null: none), as `config get|set` and the admin API show it. */
export async function withCap<T extends { location_id: string }>(config: T, caps: Pick<Caps, "capOf">): Promise<T & { monthly_cap: number | null }> {
  return { ...config, monthly_cap: (await caps.capOf(config.location_id)) ?? null };
}
