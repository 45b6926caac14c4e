import type { TokenRecord } from "../../../store/types.ts";
import { sendingWith, unconfirmed } from "../../installs/locations.ts";
import type { SenderId, SmsGateway } from "../../clients/gateway.ts";
import { reach } from "../../clients/probe.ts";
import type { ResolvedConfig } from "../../config.ts";
import { errorMessage, GatewayError } from "../../../errors.ts";
import { maskSecret } from "../../mask.ts";
import { isLow, keyUsers } from "../status.ts";
import { fail, ok, warn, type Check } from "./check.ts";

/** What doctor learnt of one API key: unusable keys are not asked about sender IDs. */
interface KeyFindings {
  usable: boolean;
  senders?: SenderId[];
  sendersError?: string;
}

/** Cast answers; every key in use works and has credit; every location's sender ID is approved on its key. */
export async function checkCast(
  config: ResolvedConfig,
  sms: SmsGateway,
  records: TokenRecord[],
  timeoutMs: number,
  checks: Check[],
): Promise<void> {
  const found = await reach(config.sms.apiUrl, timeoutMs);
  if (!found.ok) {
    checks.push(fail("Cast reachable", `${config.sms.apiUrl}: ${found.kind} (${found.detail}); check DNS, firewall, proxy and SMS_API_URL`));
    return;
  }
  checks.push(ok("Cast reachable", `${config.sms.apiUrl} answered (HTTP ${found.status}) in ${found.ms} ms`));
  const installed = records.filter((r) => !r.uninstalledAt);
  const findings = new Map<string, KeyFindings>();
  for (const [apiKey, users] of keyUsers(config.sms.apiKey, installed)) findings.set(apiKey, await checkKey(config, sms, apiKey, users, checks));
  for (const record of installed) checks.push(...senderCheck(config, record, findings));
  if (config.sms.apiKey && config.sms.senderId) {
    const check = senderOn("sender ID SMS_SENDER_ID", config.sms.senderId, config.sms.apiKey, findings.get(config.sms.apiKey), "set SMS_SENDER_ID to one of them");
    if (check) checks.push(check);
  }
}

async function checkKey(config: ResolvedConfig, sms: SmsGateway, apiKey: string, users: string[], checks: Check[]): Promise<KeyFindings> {
  const name = `Cast key ${maskSecret(apiKey)}`;
  const who = `used by ${users.slice(0, 5).join(", ")}${users.length > 5 ? ` and ${users.length - 5} more` : ""}`;
  let credits: number;
  try {
    credits = await sms.balance(apiKey);
  } catch (error) {
    checks.push(fail(name, `${who}: ${keyProblem(error)}`));
    return { usable: false };
  }
  if (isLow(credits, config.lowBalanceCredits)) {
    checks.push(warn(name, `${who}: ${credits} credits, below LOW_BALANCE_CREDITS (${config.lowBalanceCredits}): top up soon`));
  } else {
    checks.push(ok(name, `${who}: ${credits} credits`));
  }
  try {
    return { usable: true, senders: (await sms.senderIds(apiKey)).filter((s) => s.channel === "sms") };
  } catch (error) {
    return { usable: true, sendersError: errorMessage(error) };
  }
}

/** What the balance call's failure says to the operator, by its kind (core/clients/gateway.ts). */
function keyProblem(error: unknown): string {
  const failure = error instanceof GatewayError ? error.failure : undefined;
  if (failure === "out_of_credit") return `out of credit (${errorMessage(error)}): top up the Cast account; its messages wait meanwhile`;
  if (failure === "key_refused" || failure === "account_held") return `refused (${errorMessage(error)}): replace the key, or ask Cast why it is refused`;
  return `balance call failed (${errorMessage(error)})`;
}

/** The sender ID a location's messages go with, on the key they go with. */
function senderCheck(config: ResolvedConfig, record: TokenRecord, findings: Map<string, KeyFindings>): Check[] {
  const name = `sender ID ${record.locationId}`;
  const { apiKey, senderId } = sendingWith(record, { ...config.sms, allowedCompanyIds: config.allowedCompanyIds });
  if (!apiKey) {
    if (!record.approved && config.sms.apiKey) {
      return [warn(name, `pending approval, with no API key of its own: its messages are reported failed; \`bridge locations approve ${record.locationId}\` or give it a key`)];
    }
    if (config.sms.apiKey && unconfirmed(record, config.allowedCompanyIds)) {
      const why = "approved by a database upgrade, not by the operator, with no API key of its own: its messages are reported failed";
      return [warn(name, `${why}; confirm it with \`bridge locations approve ${record.locationId}\`, or give it a key`)];
    }
    if (config.sms.apiKey) {
      const why = `of company ${record.companyId || "(none)"}, not in ALLOWED_COMPANY_IDS, with no API key of its own: its messages are reported failed`;
      return [warn(name, `${why}; \`bridge locations unapprove ${record.locationId}\`, add the company to ALLOWED_COMPANY_IDS, or give it a key`)];
    }
    return [fail(name, `no API key (neither its own nor SMS_API_KEY): its messages are reported failed; set SMS_API_KEY or \`bridge config set ${record.locationId} --sms-api-key -\``)];
  }
  const fix = `\`bridge config set ${record.locationId} --sender-id\` one of them`;
  const check = senderOn(name, senderId, apiKey, findings.get(apiKey), fix);
  return check ? [check] : [];
}

/** `senderId` ("" = Cast's default) against the key's approved list; nothing when the key itself failed. */
function senderOn(name: string, senderId: string, apiKey: string, found: KeyFindings | undefined, fix: string): Check | undefined {
  if (!found?.usable) return undefined;
  const key = maskSecret(apiKey);
  if (!found.senders) return warn(name, `could not list the sender IDs approved on key ${key} (${found.sendersError ?? "no answer"})`);
  const approved = found.senders.map((s) => s.senderId);
  if (approved.length === 0) return fail(name, `key ${key} has no approved SMS sender ID: Cast would refuse every message; ask Cast to approve one`);
  if (!senderId) return ok(name, `none set: Cast uses the account's first approved one (${approved[0]})`);
  if (approved.includes(senderId)) return ok(name, `${senderId}, approved on key ${key}`);
  return fail(name, `${senderId} is not approved on key ${key} (approved: ${approved.join(", ")}): Cast would refuse it or the carrier reject it (REJECTD); ${fix}, or have Cast approve ${senderId}`);
}
