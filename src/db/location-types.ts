/**
 * Where an approval came from: an operator's `locations approve`, an install of a company
 * in ALLOWED_COMPANY_IDS, or schema 2, which approved every location stored before
 * approvals existed ('unconfirmed': strangers' installs included). 'withdrawn': an
 * operator's `locations unapprove`, which no install lifts. '': never approved.
 */
export type ApprovalSource = "" | "operator" | "allowlist" | "unconfirmed" | "withdrawn";

/**
 * A location for a listing: no tokens, so none is ever decrypted for a listing, and
 * times already in ISO 8601 (SQLite writes them faster than JavaScript would).
 */
export interface LocationListing {
  locationId: string;
  /** The location's name in HighLevel; "" when not known. */
  name: string;
  companyId: string;
  senderId: string;
  /** Opened here; `listLocations` masks it before anything shows it. "" when it cannot be opened. */
  smsApiKey: string;
  /** Why the stored API key cannot be opened (another key sealed it, or it was moved); "" when it opens. */
  smsApiKeyError: string;
  expiresAt: string;
  installedAt: string;
  updatedAt: string;
  /** Why the location needs a reinstall; "" when it is healthy. */
  refreshError: string;
  /** May use the global SMS_API_KEY and SMS_SENDER_ID. */
  approved: boolean;
  approvedBy: ApprovalSource;
  /** When the app was uninstalled from it; null while installed. */
  uninstalledAt: string | null;
}

/** What reconciliation compares of a company's stored location: no secret. */
export interface CompanyLocation {
  locationId: string;
  name: string;
  uninstalledAt: number;
  refreshError: string;
}
