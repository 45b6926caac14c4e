import type { TokenStore } from "../../db/tokens.ts";
import { approvedOffList, offListWarning } from "../locations.ts";
import { ok, warn, type Check } from "./check.ts";

/**
 * With ALLOWED_COMPANY_IDS set, the approved locations of companies not on it: the
 * warning `serve` logs at start. Nothing without a list: approvals alone decide then.
 */
export function checkApprovals(tokens: TokenStore, allowedCompanyIds: readonly string[]): Check[] {
  if (allowedCompanyIds.length === 0) return [];
  const outside = approvedOffList(tokens, allowedCompanyIds);
  if (outside.length > 0) return [warn("approvals", offListWarning(outside))];
  return [ok("approvals", "every approved location's company is in ALLOWED_COMPANY_IDS")];
}
