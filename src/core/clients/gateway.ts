/**
 * What bridge asks of an SMS gateway, whichever it is. Each driver implements it in its
 * own module (Cast.ph: cast.ts; a phone running SMS Gateway for Android: android-driver.ts)
 * and declares what differs between gateways as properties (`GatewayDriver`); the registry
 * (registry.ts) picks the driver that owns a key, and the core reads only this module.
 *
 * Every method throws GatewayError. Its `failure` says what happened, decided by the
 * driver that saw the answer; the core decides on it alone (core/retry-policy.ts), never
 * on an HTTP status. A driver maps each of its answers onto one kind:
 * - "rejected": this request was refused as it is (this message: a bad number, a sender
 *   ID not allowed, a sandbox key); nothing was sent, and the same request will not pass.
 * - "rate_limited": the gateway asked us to slow down (`retryAfterMs`, when it said);
 *   nothing was sent. Every call of the process waits.
 * - "unreachable": no connection was made; the request never left, nothing was sent.
 * - "unknown": the request left and no clear answer came (a timeout, a dropped
 *   connection, a 5xx, an answer without a message id): a send may have gone, so it is
 *   tried again only with the same idempotency key.
 * - "key_refused": the API key itself is refused (wrong, revoked, expired, its user
 *   inactive); nothing was sent. The key is held; a working balance call shows it is over.
 * - "out_of_credit": the account has no credit for the send; nothing was sent. The key
 *   is held; only a send shows it is over (a postpaid balance is below 0 in normal use).
 * - "account_held": the account may not send from here (an address not whitelisted, a
 *   channel not allowed); nothing was sent. The key is held; only a send shows it is over,
 *   as a working balance call does not.
 * - "not_found": a status look-up of a message id the gateway has no record of.
 * `keySpent` says the answer was replayed from the idempotency cache: nothing was ever
 * sent under that key. `gatewayCode` is the gateway's own code, for the operator.
 */
export interface SmsGateway {
  /** The longest text one message may carry, in characters. */
  readonly maxMessageLength: number;
  /** Sends one SMS, retrying only what provably did not go out. */
  send(req: SendRequest): Promise<SendResult>;
  /** A sent message's delivery status. */
  status(apiKey: string, messageId: string): Promise<DeliveryStatus>;
  /** One page of the account's log, newest first, with each message's status: many receipts in one call. */
  logs(apiKey: string, page: LogQuery): Promise<LogPage>;
  /** The account's credits: also how a held key is probed. */
  balance(apiKey: string): Promise<number>;
  /** The sender IDs approved on the key's account. */
  senderIds(apiKey: string): Promise<SenderId[]>;
}

export interface SendRequest {
  apiKey: string;
  /** Local form, 09XXXXXXXXX. */
  to: string;
  message: string;
  /** "" lets the gateway use the account's default sender. */
  senderId: string;
  /** The same for every attempt at one message, so that the gateway sends it once (Cast: X-Idempotency-Key). */
  idempotencyKey: string;
}

export interface SendResult {
  messageId: string;
  parts: number;
  /** The answer was the gateway's kept answer to an earlier request under the idempotency key, not a send now. */
  replayed?: boolean;
}

/** The gateway's word on one message, in Cast's terms (`GET /api/v1/sms/status/{id}`): another driver maps its own onto them. */
export interface DeliveryStatus {
  /** sent, pending (carrier accepted), delivered, undelivered, failed, unknown (the carrier's UNKNOWN); or UNSENT. */
  status: string;
  /** The carrier's code: DELIVRD, REJECTD, UNDELIV, EXPIRED, …; "" when none yet. */
  dlrStatus: string;
  errorMessage: string;
}

/**
 * A status that is not final: the gateway proves the message never went and it may go
 * again under a new idempotency key (a phone's send limit). `errorMessage` says why.
 */
export const UNSENT = "unsent";

export interface LogQuery {
  /** Entries on the page (Cast: at most 500). */
  limit: number;
  /** Entries skipped from the newest. */
  offset: number;
}

/** One page of an account's log. */
export interface LogPage {
  /** Each listed message's status, by the message id its send was answered with. */
  statuses: Map<string, DeliveryStatus>;
  /** When each listed message was sent, by the gateway's clock (ms since the epoch). */
  sentAt: Map<string, number>;
  /**
   * Entries on the page: the next page starts this many further back. Only an empty page
   * ends the log: a gateway may serve fewer than the limit asked on every page.
   */
  entries: number;
  /** When the page's oldest entry was sent (ms since the epoch, the gateway's clock); undefined when no entry says. */
  oldestAt: number | undefined;
}

/** A sender ID approved on the account. */
export interface SenderId {
  senderId: string;
  label: string;
  /** "sms" or "sim": the channel it sends on. */
  channel: string;
}

/**
 * A driver: the calls, and what core reads of the gateway instead of asking which it is.
 * Each property is read in one place (docs/architecture.md, "Adding a gateway").
 */
export interface GatewayDriver extends SmsGateway {
  /** The kind a location's settings name (`cast`, `android`); a key of a driver that names its keys starts `<kind>:` (phone-key.ts). */
  readonly kind: string;
  /**
   * Its sends' own budget per key (the scheduler's): taken instead of Cast's shared budgets
   * (the process's requests a second, each key's messages a second). Undefined: Cast's.
   */
  readonly budget: DriverBudget | undefined;
  /** How its delivery receipts arrive, and how long a sent message waits for one. */
  readonly receipts: DriverReceipts;
  /**
   * How long after a message's first attempt the gateway still answers a repeat under the
   * same idempotency key without sending again, with bridge's margin: within it an attempt
   * that got no clear answer is repeated with its key (retry policy, crash recovery); past
   * it the message is "delivery unknown". 0: the gateway has no idempotency, and an attempt
   * that may have sent is never repeated.
   */
  readonly idempotencyWindowMs: number;
  /** What the gateway keeps per account: each false is a call that answers nothing of it. */
  readonly account: DriverAccount;
  /** The gateway a send with `key` went through, as the message log records it (`jobs.gateway`): never a secret. */
  gatewayOf(key: string): string;
}

/** A key's own pace: `perSecond` with `burst`; `perHour`, at most so many sends in any hour. */
export interface DriverBudget {
  perSecond: number;
  burst: number;
  perHour?: number;
}

export interface DriverReceipts {
  /**
   * "log": read in batches from the key's log (`logs`), a message the log cannot tell of
   * asked alone (`status`). "pushed": the gateway posts them to bridge's webhook; it keeps
   * no log (`logs` fails), and a message still waiting at its deadline is asked alone.
   */
  source: "log" | "pushed";
  /** How long a sent message waits for its receipt; undefined: DLR_WAIT. */
  waitMs: number | undefined;
  /** A message without a final receipt at its deadline is "delivery unknown", not taken as delivered. */
  unknownWithoutReceipt: boolean;
}

export interface DriverAccount {
  /** `balance` is the account's credits; false: it only proves the credentials (and answers 0). */
  credits: boolean;
  /** `senderIds` lists the account's approved sender IDs; false: it answers none, and a send goes without one. */
  senderIds: boolean;
  /** The account keeps an unsubscribed list (Cast's, per sender ID) that each send is checked against first. */
  unsubscribedList: boolean;
}

/** One SmsGateway over every driver, each call going to the driver that owns its key; and the drivers (registry.ts). */
export interface Gateways extends SmsGateway {
  /** The driver that owns `key`. */
  driverOf(key: string): GatewayDriver;
  /** Every driver, by its kind. */
  readonly drivers: ReadonlyMap<string, GatewayDriver>;
}
