import type { Command } from "commander";
import { describeChannel } from "../core/alert-channel.ts";
import type { StatusView } from "../core/operator/status.ts";
import type { GlobalOptions } from "./context.ts";
import { json, table, type Io } from "./io.ts";

/** A balance is read again when older than this; Cast gets this long to answer. */
const BALANCE_TIMEOUT_MS = 5_000;

/** `bridge status [--json]`: the queue, backlogs, outages, held keys, locations that need a hand, balances, servers and leases. */
export function statusCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  program
    .command("status")
    .description("the queue by status, each location's backlog, outages in progress, held gateway keys, locations that need attention, balances, the alert channel, the servers and their leases")
    .option("--json", "machine-readable output, as GET /api/admin/status")
    .addHelpText("after", "\nBalances older than 5 minutes are read from Cast again (SMS_API_URL) before they are shown.")
    .action(async (options: { json?: boolean }) => {
      const [{ withCore }, { apiKeysInUse, bridgeStatus }] = await Promise.all([import("./context.ts"), import("../core/operator/status.ts")]);
      const tuning = { sms: { timeoutMs: BALANCE_TIMEOUT_MS, retries: 0 } };
      const view = await withCore(
        io,
        globals(),
        "store",
        async (core) => {
          await core.operator.balances.refresh(await apiKeysInUse(core.tokens, core.config.sms.apiKey));
          return bridgeStatus({ ...core, allowedCompanyIds: core.config.allowedCompanyIds, lowCredits: core.config.lowBalanceCredits, now: Date.now() });
        },
        tuning,
      );
      io.out(options.json ? json(view) : describe(view));
    });
}

function describe(s: StatusView): string {
  const replies = `replies: ${s.inbound.received} received, ${s.inbound.posted} posted, ${s.inbound.waiting} waiting, ${s.inbound.unrouted} unrouted, ${s.inbound.failed} not posted`;
  const out: string[] = [`queue: ${Object.entries(s.queue).map(([status, n]) => `${n} ${status}`).join(", ")}`, replies, ""];
  out.push(section("backlog", ["LOCATION", "WAITING", "OLDEST RECEIVED", "WAITING FOR"], s.backlog.map((b) => [b.location_id, String(b.waiting), b.oldest_received_at, age(b.oldest_wait_seconds)])));
  out.push(
    section(
      "outages in progress (their messages wait)",
      ["WHAT", "SINCE", "FOR", "WAITING", "LAST FAILED CALL", "WHY"],
      s.outages.map((o) => [`${o.name} unreachable`, o.since, age(o.for_seconds), String(o.waiting_messages), o.last_failed_at, `${o.kind}: ${o.reason}`]),
    ),
  );
  out.push(section("held gateway keys (their messages wait)", ["KEY", "STATUS", "SINCE", "REASON"], s.held_keys.map((k) => [k.key, String(k.status ?? ""), k.since, k.reason ?? ""])));
  out.push(section("locations that need attention", ["LOCATION", "WHY"], s.needs_attention.map((l) => [l.location_id, l.reason])));
  out.push(
    section(
      "gateway balances",
      ["KEY", "CREDITS", "CHECKED", "NOTE"],
      s.balances.map((b) => [b.key, b.credits === null ? "?" : String(b.credits), b.checked_at ?? "", b.error ?? (b.low ? "LOW: below LOW_BALANCE_CREDITS" : "")]),
    ),
  );
  const { reply, operator, page } = s.opt_outs;
  out.push(`opt-outs: ${reply + operator + page} numbers on the locations' lists (${reply} by reply, ${operator} by an operator, ${page} by a location admin)\n`);
  out.push(`alerts: ${describeChannel(s.alerts)}\n`);
  out.push(section("servers", ["SERVER", "ADDRESS", "STARTED", "LAST HEARTBEAT"], s.servers.map((v) => [v.id, v.address, v.started_at, `${age(v.heartbeat_age_seconds)} ago`])));
  out.push(section("leases held", ["LEASE", "HOLDER", "UNTIL"], s.leases.map((l) => [l.name, l.holder, l.until])));
  return out.join("\n");
}

function section(title: string, headers: string[], rows: string[][]): string {
  return rows.length === 0 ? `${title}: none\n` : `${title}:\n${table(headers, rows)}`;
}

function age(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}
