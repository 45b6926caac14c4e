/** The CRM client's shared types: crm.ts builds the client, crm-*.ts make its calls. */
import type { CallObserver } from "./observe.ts";

/** The CRM platform (HighLevel / LeadConnector) API, as bridge uses it. */
export interface CrmOptions {
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  /** {BASE_URL}/oauth-callback, sent with the code exchange. */
  redirectUri: string;
  /** The 24-hex part of the client id. */
  appId: string;
  /** Every request gives up after this long (spec: 30 s). */
  timeoutMs?: number;
  /** First back-off after a 429 with no Retry-After. */
  retryDelayMs?: number;
  /** Told of every HTTP call: its time and how it ended (outages, metrics). */
  observe?: CallObserver;
}

export interface TokenResponse {
  accessToken: string;
  /** "" when a /oauth/locationToken answer has none: the company's token renews it. */
  refreshToken: string;
  expiresIn: number;
  userType: string;
  locationId: string;
  companyId: string;
  installedLocations: string[];
}

export interface CrmAnswer {
  status: number;
  text: string;
  retryAfter: string | null;
}

/** How one client talks to the CRM: its options, and the calls every method goes through. */
export interface CrmCalls {
  options: CrmOptions;
  /** The one place that talks HTTP to the CRM: base URL, auth, version, timeout. */
  request(path: string, init: CrmCall): Promise<CrmAnswer>;
  /** Retries the CRM's 429 ("100 requests per 10 s"), honouring Retry-After. */
  withRateLimitRetry<T>(fn: () => Promise<T>): Promise<T>;
}

/** One HTTP call to the CRM, as `CrmCalls.request` takes it. */
export interface CrmCall {
  /** The public function making the call, for the observer. */
  operation: string;
  method: "GET" | "POST" | "PUT";
  headers?: Record<string, string>;
  body?: string;
  query?: Record<string, string | number>;
  token?: string;
  version?: string;
}
