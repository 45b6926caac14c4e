/**
 * The domain types the store contract (contract.ts) takes and gives: what core knows of
 * jobs, locations, replies and the rest, whatever database holds them. Types only.
 */
export type { FailureCode } from "../db/failures.ts";
export type { Job, JobState, OutboundMessage, Outcome } from "../db/job-rows.ts";
export type { Claim, DueJob, Receipt, Result, SendLater } from "../db/job-types.ts";
export type { ApprovalSource, CompanyLocation, LocationListing } from "../db/location-types.ts";
export type { NewToken, TokenRecord } from "../db/tokens.ts";
export type { CompanyRecord, NewCompanyToken } from "../db/companies.ts";
export type { TokenFields } from "../db/token-rows.ts";
export type { Backlog, LoggedMessage, MessageEvent, MessageFilter, MessageStatus, Usage } from "../db/messages.ts";
export type { GatewayKey, KeyHoldRecord } from "../db/gateway-keys.ts";
export type { OptOut, OptOutBy } from "../db/optouts.ts";
export type { InboundFilter, InboundRow, InboundState, NewInbound, OptOutWord, RoutedBy } from "../db/inbound.ts";
export type { GatewayKind, PhoneChange, PhoneDescription, PhoneSettings } from "../db/phones.ts";
export type { OutageRecord } from "../db/outages.ts";
export type { PhoneJob } from "../db/phone-jobs.ts";
export type { CapStanding, UsageFilter, UsageRow } from "../db/usage-store.ts";
export type { Alert, AlertHealth, AlertKind, OpenCondition } from "../db/alerts.ts";
