import type { LocationRegistry } from "../../../store/contract.ts";
import { approvedOffList, offListWarning, unconfirmedApprovals, unconfirmedWarning } from "../../installs/locations.ts";
import { ok, warn, type Check } from "./check.ts";

/**
 * With ALLOWED_COMPANY_IDS set, the approved locations of companies not on it; without
 * it, the approvals a database upgrade gave and no operator confirmed: the warnings
 * `serve` logs at start.
 */
export async function checkApprovals(tokens: LocationRegistry, allowedCompanyIds: readonly string[]): Promise<Check[]> {
  if (allowedCompanyIds.length === 0) {
    const unconfirmed = await unconfirmedApprovals(tokens, allowedCompanyIds);
    return unconfirmed.length > 0 ? [warn("approvals", unconfirmedWarning(unconfirmed))] : [];
  }
  const outside = await approvedOffList(tokens, allowedCompanyIds);
  if (outside.length > 0) return [warn("approvals", offListWarning(outside))];
  return [ok("approvals", "every approved location's company is in ALLOWED_COMPANY_IDS")];
}
