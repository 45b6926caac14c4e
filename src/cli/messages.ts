import type { Command } from "commander";
import type { MessageDetail, MessageQuery, MessageView, RetryOutcome } from "../core/operator/messages.ts";
import type { ReplyDetail, ReplyView } from "../core/inbound/view.ts";
import { ID_RULE, isId } from "../core/ids.ts";
import type { GlobalOptions } from "./context.ts";
import { json, printable, table, UsageError, type Io } from "./io.ts";

const STATUSES = "queued, held, sending, on_phone, sent, delivered, failed; replies: unrouted, posting, posted";
/** Statuses only replies have: the outbound log is not read for them. */
const REPLY_ONLY = ["unrouted", "posting", "posted"];
const ALL_STATUSES = ["queued", "held", "sending", "on_phone", "sent", "delivered", "failed", ...REPLY_ONLY];
const SINCE = "received since: an ISO time (2026-11-24T08:00:00Z) or a duration back from now (15m, 2h, 7d)";

/** `bridge messages list|show|retry`: the message log, read and acted on offline (docs/cli.md, "The message log"). */
export function messagesCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  const messages = program
    .command("messages")
    .description("the message log: every message bridge took, what became of it, and why")
    .addHelpText("after", `\nA finished message is kept RETENTION_DAYS (default 30); phones are masked in lists.`);

  messages
    .command("list")
    .description("messages sent and replies received, newest first")
    .option("--location <id>", "only this location's")
    .option("--status <status>", `only those in this status: ${STATUSES}`)
    .option("--since <time>", SINCE)
    .option("--limit <n>", "at most this many (default 50)")
    .option("--json", 'machine-readable: {"messages":[…],"replies":[…]} with the admin API\'s field names')
    .action(async (options: MessageQuery & { json?: boolean }) => {
      const { messages: list, replies, limit } = await withLog(io, globals(), (log, lib, store, inbound) => both(log, lib, store, inbound, options));
      if (options.json) return io.out(json({ messages: list, replies }));
      if (list.length === 0 && replies.length === 0) return io.out("no messages\n");
      // Newest first, to the millisecond: the table shows seconds.
      const rows = [...list.map((m) => ({ at: m.received_at, cells: row(m) })), ...replies.map((r) => ({ at: r.received_at, cells: replyRow(r) }))];
      rows.sort((a, b) => b.at.localeCompare(a.at));
      io.out(table(["RECEIVED", "DIRECTION", "MESSAGE", "LOCATION", "PHONE", "STATUS", "PARTS", "WHY"], rows.slice(0, limit).map((r) => r.cells)));
    });

  routeCommand(messages, io, globals);

  messages
    .command("show <messageId>")
    .description("one message and its timeline (received, sent, receipt, reported, each error), or one reply, by the id list shows")
    .option("--json", "machine-readable output")
    .action(async (messageId: string, options: { json?: boolean }) => {
      messageArg(messageId);
      const { showLogEntry } = await import("../core/operator/message-log.ts");
      const detail = await withLog(io, globals(), (log, _lib, store) => showLogEntry(log, store.replies, messageId));
      io.out(options.json ? json(detail) : "direction" in detail ? describeReply(detail) : describe(detail));
    });

  messages
    .command("retry [messageId...]")
    .description("queue again failed messages that never reached the carrier (never one it delivered or may have)")
    .option("--failed", "every failed message that may be retried (with --since, --location)")
    .option("--since <time>", `with --failed: ${SINCE}`)
    .option("--location <id>", "with --failed: only this location's")
    .option("--json", 'machine-readable: {"queued":[…],"refused":[{message_id,reason}]}')
    .addHelpText("after", "\nA running `bridge serve` sends them within a second; otherwise they go at its next start.")
    .action(async (ids: string[], options: { failed?: boolean; since?: string; location?: string; json?: boolean }) => {
      if (options.failed && ids.length > 0) throw new UsageError("name message ids or use --failed, not both");
      if (!options.failed && ids.length === 0) throw new UsageError("name the message ids to retry, or use --failed");
      if (!options.failed && (options.since || options.location)) throw new UsageError("--since and --location go with --failed");
      for (const id of ids) messageArg(id);
      const outcome = await withLog(io, globals(), async (log, lib) =>
        options.failed
          ? await lib.retryFailed(log, filterOf(lib, { since: options.since, location: options.location }), Date.now())
          : await lib.retryMessages(log, ids, Date.now()),
      );
      io.out(options.json ? json(outcome) : describeRetry(outcome, options.failed === true));
      // A message named and not queued is a failure for a script; with --failed, refusals are expected.
      if (outcome.refused.length > 0 && !options.failed) throw new Error(`${outcome.refused.length} message(s) not queued`);
    });
}

/** `bridge messages route`: an unrouted reply gets its location. */
function routeCommand(messages: Command, io: Io, globals: () => GlobalOptions): void {
  messages
    .command("route <replyId> <locationId>")
    .description("give an unrouted reply its location: a running bridge serve then posts it to HighLevel")
    .action(async (replyId: string, locationId: string) => {
      messageArg(replyId);
      if (!isId(locationId)) throw new UsageError(`not a location id: ${JSON.stringify(locationId.slice(0, 70))} (it ${ID_RULE})`);
      const { routeStoredReply } = await import("../sea/heavy.ts");
      await withLog(io, globals(), (_log, _lib, store) => routeStoredReply(store.replies, replyId, locationId, Date.now()));
      io.out(`routed ${replyId} to ${locationId}: a running bridge serve posts it to HighLevel within a second\n`);
    });
}

type Lib = typeof import("../core/operator/messages.ts");
type Log = import("../store/contract.ts").MessageLog;
type Store = import("../store/contract.ts").Store;
/** The replies' side of the log. */
type InboundLib = typeof import("../core/inbound/view.ts");

async function withLog<T>(io: Io, globals: GlobalOptions, fn: (log: Log, lib: Lib, store: Store, inbound: InboundLib) => T | Promise<T>): Promise<T> {
  const [{ withStore }, lib, view] = await Promise.all([import("./context.ts"), import("../core/operator/messages.ts"), import("../core/inbound/view.ts")]);
  // The message log needs no secrets: no check of the sealed ones, no renewal.
  return withStore(io, globals, (store) => fn(store.messages, lib, store, view), { secrets: false });
}

/** Messages sent and replies received, as the filter asks: a status only one side has reads only that side. */
async function both(log: Log, lib: Lib, store: Store, inbound: InboundLib, options: MessageQuery) {
  const { status } = options;
  if (status !== undefined && !ALL_STATUSES.includes(status)) throw new UsageError(`--status: must be one of ${STATUSES}`);
  const replyOnly = status !== undefined && REPLY_ONLY.includes(status);
  const filter = filterOf(lib, { ...options, status: replyOnly ? undefined : status, cursor: undefined }, 100_000);
  const replyStatus = status === undefined ? undefined : inbound.isReplyStatus(status) ? status : null;
  const messages = replyOnly ? [] : (await lib.listMessages(log, filter)).messages;
  const { locationId, since, limit } = filter;
  const replies = replyStatus === null ? [] : await inbound.listReplies(store.replies, { locationId, since, limit, status: replyStatus });
  return { messages, replies, limit };
}

/** The log's own query checks, as usage errors (exit 2). */
function filterOf(lib: Lib, query: MessageQuery, maxLimit?: number) {
  try {
    return lib.messageFilter(query, Date.now(), maxLimit);
  } catch (error) {
    throw new UsageError(`--${(error as Error).message}`);
  }
}

function messageArg(value: string): string {
  if (!isId(value)) throw new UsageError(`not a message id: ${JSON.stringify(value.slice(0, 70))} (it ${ID_RULE})`);
  return value;
}

function row(m: MessageView): string[] {
  return [m.received_at.slice(0, 19).replace("T", " "), "out", m.message_id, m.location_id, m.phone, m.status, String(m.parts), why(m)];
}

function replyRow(r: ReplyView): string[] {
  const why = r.error ? clipped(r.error) : r.routed_by ? `routed by ${r.routed_by.replace("_", " ")}` : "route it: bridge messages route ID LOCATION";
  return [r.received_at.slice(0, 19).replace("T", " "), "in", r.id, r.location_id || "-", r.from, r.status, "", why];
}

/** The short reason beside a status: an error, a receipt, or what it waits for. */
function why(m: MessageView): string {
  if (m.status === "failed" || m.status === "held" || (m.status === "queued" && m.attempts > 0)) return clipped(m.error_message ?? m.error_code ?? "");
  if (m.status === "on_phone") return "on the phone, not yet sent";
  if (m.status === "sent") return "waiting for the delivery receipt";
  if (m.status === "delivered" && m.receipt === "none") return "no delivery receipt came";
  return "";
}

function clipped(text: string): string {
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

function describe(d: MessageDetail): string {
  const fields: [string, string | number | null][] = [
    ["message", d.message_id],
    ["location", d.location_id],
    ["contact", d.contact_id],
    ["phone", d.phone],
    ["status", d.status === "on_phone" ? "on_phone (on the phone, not yet sent)" : d.status],
    ["text", `${d.length} characters, ${d.parts} part(s)`],
    // A phone sends from its own number: no sender ID.
    ["sender ID", d.sender_id === null || d.device_id ? null : d.sender_id || "(gateway default)"],
    ["gateway", `${d.gateway}${d.device_id ? ` (device ${d.device_id})` : ""}${d.gateway_message_id ? ` ${d.gateway_message_id}` : ""}`],
    ["receipt", d.receipt],
    ["reported", d.reported_status && `${d.reported_status} at ${d.reported_at}`],
    ["error", d.error_code && `${d.error_code}: ${d.error_message ?? ""}`],
    ["attempts", d.attempts],
    ["idempotency key", d.idempotency_key],
  ];
  const shown = fields.filter(([, v]) => v !== null && v !== "").map(([k, v]) => `${`${k}:`.padEnd(17)}${printable(String(v))}`);
  const timeline = d.timeline.map((t) => `  ${t.at}  ${t.event.padEnd(13)} ${printable(t.detail)}`);
  return [...shown, "", "timeline:", ...timeline].join("\n") + "\n";
}

function describeReply(r: ReplyDetail): string {
  const fields: [string, string | number | null][] = [
    ["reply", r.id],
    ["direction", "in"],
    ["location", r.location_id || "(unrouted: bridge messages route ID LOCATION)"],
    ["from", r.from],
    ["to", r.to],
    ["status", r.status],
    ["text", `${r.length} characters${r.opt_out ? ` (a ${r.opt_out} word)` : ""}`],
    ["source", `${r.source}${r.device_id ? ` (device ${r.device_id})` : ""}`],
    ["routed by", r.routed_by.replace("_", " ")],
    ["received", r.received_at],
    ["sent at", r.received_at_source],
    ["HighLevel id", r.crm_message_id],
    ["error", r.error],
    ["attempts", r.attempts],
    ["updated", r.updated_at],
  ];
  return `${fields.filter(([, v]) => v !== null && v !== "").map(([k, v]) => `${`${k}:`.padEnd(17)}${printable(String(v))}`).join("\n")}\n`;
}

function describeRetry(outcome: RetryOutcome, all: boolean): string {
  const lines = [
    ...outcome.queued.map((id) => `queued ${id}: it goes again with a new idempotency key`),
    ...outcome.refused.map(({ message_id, reason }) => `refused ${message_id}: ${printable(reason)}`),
  ];
  if (all) lines.push(`${outcome.queued.length} queued, ${outcome.refused.length} refused`);
  return `${lines.join("\n")}\n`;
}
