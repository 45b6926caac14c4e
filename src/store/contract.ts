import type { KeyBudgets } from "./contract-budgets.ts";
import type { InboundStore } from "./contract-inbound.ts";
import type { AppSessionStore, LeaseStore, ServerStore, UnsubscribedStore } from "./contract-servers.ts";
import type { JobStore, MessageLog, PhoneJobs } from "./contract-jobs.ts";
import type { AlertStore, UsageStore } from "./contract-usage.ts";
import type {
  CompanyLocation, CompanyRecord, GatewayKey, KeyHoldRecord, LocationListing, NewCompanyToken, NewToken, OptOut, OptOutBy,
  OutageRecord, PhoneChange, PhoneDescription, PhoneSettings, TokenRecord,
} from "./types.ts";

export type { KeyBudgets } from "./contract-budgets.ts";
export type { AssignRefusal, InboundStore } from "./contract-inbound.ts";
export type { EnqueueLimit, JobStore, KeptKey, MessageLog, PhoneJobs } from "./contract-jobs.ts";
export type { AlertStore, UsageStore } from "./contract-usage.ts";
export type {
  AppSession, AppSessionStore, LeaseRecord, LeaseStore, ServerRecord, ServerStore, StoredUnsubscribed, UnsubscribedNumber, UnsubscribedStore,
} from "./contract-servers.ts";

/**
 * The store contract: what core may ask of the database, whichever holds it (SQLite now,
 * sqlite.ts). Each method is one transaction and returns a Promise: writes settle once
 * they are on disk. Core never opens a transaction nor composes writes; what must be
 * written together is one method. The domain types are types.ts.
 */
export interface Store {
  tokens: LocationRegistry;
  /** Agencies' own tokens, kept to follow the locations they add later. */
  companies: CompanyStore;
  jobs: JobStore;
  /** The message log: what the operator lists, shows and retries. */
  messages: MessageLog;
  /** What the operator's view knows of each gateway key: holds and balances. */
  gatewayKeys: GatewayKeys;
  /** The locations' opt-out lists. */
  optOuts: OptOutStore;
  /** Replies into HighLevel. */
  replies: InboundStore;
  /** Each location's gateway: Cast, or a phone running SMS Gateway for Android. */
  phones: PhoneStore;
  /** The jobs sent through phones, by the id they went under. */
  phoneJobs: PhoneJobs;
  /** The outages serve recorded, for `bridge status` in another process. */
  outageRecords: OutageRecords;
  /** What each location used per month, and the monthly caps. */
  usage: UsageStore;
  /** Alerts to a person, kept until delivered. */
  alertStore: AlertStore;
  /** Each gateway key's send budget, shared by the servers of one store. */
  keyBudgets: KeyBudgets;
  /** The servers running on this database, by their heartbeats. */
  servers: ServerStore;
  /** Named leases with a time limit: who does the periodic work, who runs a code exchange. */
  leases: LeaseStore;
  /** The settings page's sessions, so that one opened through a server works on every other. */
  appSessions: AppSessionStore;
  /** Cast's unsubscribed list of each key, as its owner last read it for every server. */
  unsubscribed: UnsubscribedStore;
}

/** A token pair with a refresh lease, kept per row (a location's, a company's). */
export interface TokenRows {
  /** Stores a refreshed pair; false when the row is gone. */
  updateTokens(rowId: string, accessToken: string, refreshToken: string, expiresAt: number, now: number): Promise<boolean>;
  delete(rowId: string): Promise<boolean>;
  /** Takes the refresh lease of the pair `serial` until `until`; false when another holds it or the pair changed. */
  tryLease(rowId: string, serial: number, now: number, until: number): Promise<boolean>;
  /** `refreshError`: why the refresh token was refused for good ("" when it was not). */
  releaseLease(rowId: string, serial: number, refreshError?: string): Promise<void>;
}

/** Every installed location with its token pair, its settings and its install state. */
export interface LocationRegistry extends TokenRows {
  /** Upsert; settings and an earlier approval survive a reinstall. `approved`: its company is allow-listed. */
  save(token: NewToken, now: number, approved?: boolean): Promise<void>;
  get(locationId: string): Promise<TokenRecord | undefined>;
  list(): Promise<TokenRecord[]>;
  /** Every stored location's id, opening nothing. */
  ids(): Promise<string[]>;
  /** Every location for a listing, no token opened. */
  listings(): Promise<LocationListing[]>;
  /** The company's stored locations, installed or not. */
  ofCompany(companyId: string): Promise<CompanyLocation[]>;
  /** The location's company; undefined when the location is unknown. */
  companyOf(locationId: string): Promise<string | undefined>;
  /** Records the location's name in HighLevel (shown in listings only). */
  setName(locationId: string, name: string): Promise<void>;
  /** An operator lets the location use the global key and sender ID, or withdraws that; false when it is unknown. */
  setApproved(locationId: string, approved: boolean, now: number): Promise<boolean>;
  /** Marks the app uninstalled from the location, keeping its record; false if unknown or already marked. */
  markUninstalled(locationId: string, now: number): Promise<boolean>;
  /** Sets what is given; an absent field keeps its value. False when the location is unknown. */
  setConfig(locationId: string, change: { senderId?: string; smsApiKey?: string }, now: number): Promise<boolean>;
}

export interface CompanyStore extends TokenRows {
  save(token: NewCompanyToken, now: number): Promise<void>;
  get(companyId: string): Promise<CompanyRecord | undefined>;
  /** Every stored company's id: listing them opens no secret. */
  ids(): Promise<string[]>;
}

export interface GatewayKeys {
  list(): Promise<GatewayKey[]>;
  /** A send goes with this key (tagged `tag`): kept, sealed, until its receipt settles. */
  keep(tag: string, masked: string, apiKey: string): Promise<void>;
  /** The key tagged `tag` that a send went with, while kept. */
  sentWith(tag: string): Promise<string | undefined>;
  /** Forgets the keys no unsettled job was sent with; how many. */
  forgetUnused(): Promise<number>;
  held(tag: string, masked: string, hold: KeyHoldRecord): Promise<void>;
  released(tag: string): Promise<void>;
  /** A server starting anew has held nothing yet: the next send finds out again. */
  clearHolds(): Promise<void>;
  balance(tag: string, masked: string, at: number, read: { credits: number } | { error: string }): Promise<void>;
}

export interface OptOutStore {
  /** Lists the number; false when it was listed already (nothing changed). */
  add(optOut: OptOut): Promise<boolean>;
  /** Takes the number off; false when it was not listed. */
  remove(locationId: string, phone: string): Promise<boolean>;
  has(locationId: string, phone: string): Promise<boolean>;
  /** The location's list, the newest first. */
  list(locationId: string): Promise<OptOut[]>;
  /** Numbers on all the lists together, by who listed them. */
  counts(): Promise<Record<OptOutBy, number>>;
}

export interface PhoneStore {
  /** The location's settings; a location never set is on Cast. */
  get(locationId: string): Promise<PhoneSettings>;
  /** The settings as shown, the secrets only as whether they are set; undefined for a location never set. */
  describe(locationId: string): Promise<PhoneDescription | undefined>;
  /** Every location's settings as describe() shows them, in one read. */
  describeAll(): Promise<Map<string, PhoneDescription>>;
  /** The ids of the locations a phone serves, without opening their secrets. */
  locationsOfDevice(deviceId: string): Promise<string[]>;
  /** The locations a phone sends for (one phone may serve several). */
  byDevice(deviceId: string): Promise<PhoneSettings[]>;
  /** Every location that sends through a phone. */
  android(): Promise<PhoneSettings[]>;
  /** Sets what is given; false when the location is unknown. */
  set(locationId: string, change: PhoneChange, now: number): Promise<boolean>;
}

export interface OutageRecords {
  save(outage: OutageRecord): Promise<void>;
  end(remote: string): Promise<void>;
  /** At serve's start: what a stopped serve recorded is over, or will be found again. */
  clear(): Promise<void>;
  list(): Promise<OutageRecord[]>;
  /** How many messages wait on `remote` now, counted from the job and reply tables. */
  waits(remote: string): Promise<number>;
}
