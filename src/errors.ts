/** Every code an AppError carries: a closed set, so callers compare typed values. */
export type ErrorCode =
  | "CONFIG_INVALID"
  | "CRM_ERROR"
  | `GATEWAY_${Uppercase<GatewayFailure>}`
  | "ENCRYPTION_KEY"
  | "LOCATION_NOT_FOUND"
  | "MESSAGE_NOT_FOUND"
  | "BAD_QUERY"
  | "BAD_CONFIG"
  | "BAD_WEBHOOK"
  | "BAD_PHONE"
  | "BAD_INBOUND"
  | "TOO_MANY"
  | "BUSY"
  | "INBOUND_OFF"
  | "INBOUND_NOT_FOUND"
  | "NOT_STORED"
  | "NO_TOKEN"
  | "NO_COMPANY_TOKEN"
  | "REFRESH_FAILED"
  | "STORE_FAILED"
  | "NO_LOCATION_ID"
  | "NO_COMPANY_ID"
  | "COMPANY_NOT_ALLOWED"
  | "SAVE_FAILED"
  | "TOKEN_EXCHANGE_FAILED"
  | "BULK_INSTALL_FAILED";

/**
 * The one place an error's HTTP answer is chosen: the codes a request can meet, with
 * the status the contract gives them. Any other error that reaches a route is a 500.
 */
const HTTP_STATUS: Partial<Record<ErrorCode, number>> = {
  BAD_QUERY: 400,
  BAD_CONFIG: 400,
  BAD_WEBHOOK: 400,
  BAD_PHONE: 400,
  BAD_INBOUND: 400,
  // Refused, not dropped: the source keeps the reply and tries again (the phone does).
  INBOUND_OFF: 503,
  INBOUND_NOT_FOUND: 404,
  // A caller over its share (the settings page's test SMS): told when it may again.
  TOO_MANY: 429,
  // The gateway's budget is the sends' now: the settings page's call may come again shortly.
  BUSY: 503,
  NO_LOCATION_ID: 400,
  NO_COMPANY_ID: 400,
  COMPANY_NOT_ALLOWED: 403,
  // Not stored, so not acknowledged: HighLevel retries only a 429.
  NOT_STORED: 429,
  LOCATION_NOT_FOUND: 404,
  MESSAGE_NOT_FOUND: 404,
  // The spec's texts for a failed install; still the install's own answer, not a crash.
  SAVE_FAILED: 500,
  TOKEN_EXCHANGE_FAILED: 500,
  BULK_INSTALL_FAILED: 500,
  // A CLI command sealed a secret this server cannot open until it restarts with the key.
  ENCRYPTION_KEY: 503,
};

export interface AppErrorOptions {
  cause?: unknown;
  /** How long the remote asked us to wait before trying again (a 429's Retry-After). */
  retryAfterMs?: number;
}

/**
 * The closed set of errors bridge raises. Each carries a stable `code`, from which the
 * HTTP layer takes its answer (`status`). Messages keep the spec's exact texts, e.g.
 * "no token for location: <id>".
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** The HTTP status of this error when a request meets it; undefined: an internal error. */
  get status(): number | undefined {
    return HTTP_STATUS[this.code];
  }
}

/**
 * What a CRM call met, decided in the client that saw the answer (core/clients/crm.ts);
 * callers decide on it (core/retry-policy.ts), never on an HTTP status:
 * - "token_refused": the bearer access token was not taken (401): a renewed one may pass.
 * - "grant_invalid": the refresh token or code is dead (`invalid_grant`): only a reinstall brings it back.
 * - "rate_limited": 429, with `retryAfterMs`: the same call later passes.
 * - "unclear": no usable answer now (a 5xx, a 408, an answer that cannot be read, the status
 *   call's 403 in the seconds after a webhook): the same call later may pass.
 * - "rejected": any other refusal: this call, as it is, will not pass.
 * A call that got no answer at all (no connection, a timeout) throws a plain Error, its cause kept.
 */
export type CrmFailure = "token_refused" | "grant_invalid" | "rate_limited" | "unclear" | "rejected";

/** A non-2xx or unreadable answer from the CRM platform. */
export class CrmError extends AppError {
  readonly kind: CrmFailure;
  /**
   * The answer proves HighLevel did not act on the call (a 4xx, 502 or 503); false when it
   * may have (another 5xx, or a 2xx it did not answer as documented).
   */
  readonly notTaken: boolean;

  constructor(kind: CrmFailure, message: string, options: AppErrorOptions & { notTaken?: boolean } = {}) {
    super("CRM_ERROR", message, options);
    this.name = "CrmError";
    this.kind = kind;
    this.notTaken = options.notTaken ?? false;
  }
}

/** How a gateway call ended when it did not succeed: each kind's meaning is in core/clients/gateway.ts. */
export type GatewayFailure =
  | "rejected"
  | "rate_limited"
  | "unreachable"
  | "unknown"
  | "key_refused"
  | "out_of_credit"
  | "account_held"
  | "not_found";

export class GatewayError extends AppError {
  readonly failure: GatewayFailure;
  /** The HTTP status of the gateway's answer, for the operator's eyes only (a held key's status, log text): decide on `failure`. */
  readonly httpStatus: number | undefined;
  /**
   * The gateway replayed a failure it had kept under the idempotency key: nothing was
   * ever sent under that key, and nothing ever will be. Only a fresh key can send.
   */
  readonly keySpent: boolean;
  /** The gateway's own code for a refusal (Cast's `error_code`, e.g. CREDIT_LIMIT_REACHED), if it gave one. */
  readonly gatewayCode: string | undefined;

  constructor(
    failure: GatewayFailure,
    message: string,
    options: AppErrorOptions & { httpStatus?: number; keySpent?: boolean; gatewayCode?: string } = {},
  ) {
    super(`GATEWAY_${failure.toUpperCase() as Uppercase<GatewayFailure>}`, message, options);
    this.name = "GatewayError";
    this.failure = failure;
    this.httpStatus = options.httpStatus;
    this.keySpent = options.keySpent ?? false;
    this.gatewayCode = options.gatewayCode;
  }
}

/** Invalid or missing configuration; the message lists every problem at once. */
export class ConfigError extends AppError {
  readonly problems: string[];

  constructor(problems: string[]) {
    super("CONFIG_INVALID", `invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

export function notFound(locationId: string): AppError {
  return new AppError("LOCATION_NOT_FOUND", `location not found: ${locationId}`);
}

export function noToken(locationId: string): AppError {
  return new AppError("NO_TOKEN", `no token for location: ${locationId}`);
}

/** The message of any thrown value, for logs and error texts. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Text from outside (error bodies, a caller's values) ends up in logs and pages: keep it readable. */
export function clip(text: string, max = 500): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
