/**
 * The closed set of errors bridge raises. Each carries a stable `code`; the HTTP
 * layer maps `status` (when set) to the response, anything else is a 500.
 * Messages keep the spec's exact texts, e.g. "no token for location: <id>".
 */
export class AppError extends Error {
  readonly code: string;
  readonly status: number | undefined;

  constructor(code: string, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.status = options.status;
  }
}

/** A non-2xx or unreadable answer from the CRM platform. */
export class CrmError extends AppError {
  readonly httpStatus: number | undefined;
  readonly body: string | undefined;

  constructor(message: string, options: { httpStatus?: number; body?: string; cause?: unknown } = {}) {
    super("CRM_ERROR", message, { cause: options.cause });
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

  constructor(failure: GatewayFailure, message: string, options: { httpStatus?: number; cause?: unknown } = {}) {
    super(`GATEWAY_${failure.toUpperCase()}`, message, { cause: options.cause });
    this.name = "GatewayError";
    this.failure = failure;
    this.httpStatus = options.httpStatus;
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
  return new AppError("LOCATION_NOT_FOUND", `location not found: ${locationId}`, { status: 404 });
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
