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

/** A non-2xx or unreadable answer from the CRM platform. */
export class CrmError extends AppError {
  readonly httpStatus: number | undefined;
  readonly body: string | undefined;

  constructor(message: string, options: AppErrorOptions & { httpStatus?: number; body?: string } = {}) {
    super("CRM_ERROR", message, options);
    this.name = "CrmError";
    this.httpStatus = options.httpStatus;
    this.body = options.body;
  }
}

/**
 * How a gateway call ended when it did not succeed. The distinction is what keeps
 * us from sending an SMS twice:
 * - "rejected": the gateway refused it; nothing was sent.
 * - "rate_limited": still 429 after our retries; nothing was sent.
 * - "unreachable": no connection was made; nothing was sent.
 * - "unknown": the request left and we have no clear answer (timeout, 5xx, garbage):
 *   the SMS may have gone, so it must never be resent blindly.
 */
export type GatewayFailure = "rejected" | "rate_limited" | "unreachable" | "unknown";

export class GatewayError extends AppError {
  readonly failure: GatewayFailure;
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
