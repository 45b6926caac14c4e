import type { LocationRegistry } from "../../../db/tokens.ts";
import { approvedOffList, offListWarning, unconfirmedApprovals, unconfirmedWarning } from "../../installs/locations.ts";
import { ok, warn, type Check } from "./check.ts";

/**
 * With ALLOWED_COMPANY_IDS set, the approved locations of companies not on it; without
 * it, the approvals a database upgrade gave and no operator confirmed: the warnings
 * `serve` logs at start.
 */
export function checkApprovals(tokens: LocationRegistry, allowedCompanyIds: readonly string[]): Check[] {
  if (allowedCompanyIds.length === 0) {
    const unconfirmed = unconfirmedApprovals(tokens, allowedCompanyIds);
    return unconfirmed.length > 0 ? [warn("approvals", unconfirmedWarning(unconfirmed))] : [];
  }
  const outside = approvedOffList(tokens, allowedCompanyIds);
  if (outside.length > 0) return [warn("approvals", offListWarning(outside))];
  return [ok("approvals", "every approved location's company is in ALLOWED_COMPANY_IDS")];
}
