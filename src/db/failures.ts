/**
 * Why a job failed: its `error_code` column, the code HighLevel is told and the
 * `reason` of the messages metric. A closed set, so a misspelt code fails typecheck.
 */
export type FailureCode =
  // Refused before any send (core/delivery/outbound.ts).
  | "no_token"
  | "uninstalled"
  | "invalid_phone"
  | "empty_message"
  | "message_too_long"
  | "too_many_parts"
  | "not_approved"
  | "no_api_key"
  | "invalid_api_key"
  // The number is on the location's opt-out list, or on Cast's unsubscribed list for the sender ID.
  | "opted_out"
  // The location's monthly cap of SMS parts would be passed (usage-store.ts): refused at the claim.
  | "monthly_cap"
  // Held past SMS_HOLD_MAX: the gateway kept refusing the location's API key.
  | "gateway_key_refused"
  // A send that threw something other than a gateway's error.
  | "send_failed"
  // A send the gateway refused, or that was given up on (core/retry-policy.ts).
  | "gateway_rejected"
  | "gateway_rate_limited"
  | "gateway_unreachable"
  | "gateway_unknown"
  // An attempt got no clear answer (or a crash cut it off): the SMS may have left.
  | "delivery_unknown"
  | CarrierCode;

/**
 * The carrier's word in a failed delivery receipt (REJECTD, UNDELIV, EXPIRED, FAILED, …),
 * kept as the gateway gave it: the one code from outside, so it is marked where it is read.
 */
export type CarrierCode = string & { readonly carrier: true };

export function carrierCode(code: string): CarrierCode {
  return code as CarrierCode;
}

/** A code as an SQL string literal, so statements name codes through the type too. */
export function sqlCode(code: FailureCode): string {
  return `'${code}'`;
}
