import { carrierCode } from "../../db/failures.ts";
import type { Receipt } from "../../store/types.ts";
import type { DeliveryStatus } from "../clients/gateway.ts";
import { isFinal } from "./receipt-reads.ts";

/** Cast's final statuses as HighLevel's; undefined while not final (sent, pending). */
export function readReceipt(status: DeliveryStatus): Receipt | undefined {
  if (!isFinal(status)) return undefined;
  if (status.status === "delivered") return { outcome: "delivered", receipt: status.dlrStatus || "DELIVRD" };
  if (status.status === "unknown") {
    const code = status.dlrStatus || "UNKNOWN";
    return { outcome: "failed", receipt: code, errorCode: "delivery_unknown", errorMessage: `the carrier could not say whether it was delivered (${code}); delivery unknown` };
  }
  const code = status.dlrStatus || (status.status === "failed" ? "FAILED" : "UNDELIV");
  const said = status.errorMessage ? `: ${status.errorMessage}` : "";
  return { outcome: "failed", receipt: code, errorCode: carrierCode(code), errorMessage: `${CARRIER_SAYS[code] ?? `not delivered (${code})`}${said}` };
}

const CARRIER_SAYS: Record<string, string> = {
  REJECTD: "the carrier rejected the message (REJECTD)",
  UNDELIV: "the carrier could not deliver the message (UNDELIV)",
  EXPIRED: "the message expired before the carrier could deliver it (EXPIRED)",
  DELETED: "the carrier deleted the message before delivering it (DELETED)",
  FAILED: "the gateway could not submit the message to the carrier; its credits were refunded (FAILED)",
  // A phone's (clients/android.ts): no carrier code, the phone's own word follows.
  PHONE_FAILED: "the phone could not send it",
  PHONE_NOT_SENT: "the phone did not send it",
};
