import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Job, JobState } from "../../store/types.ts";
import { OPT_OUT_BY, type OptOutBy } from "../../db/optouts.ts";
import type { CallRecord } from "../clients/observe.ts";
import { maskSecret } from "../mask.ts";

export interface MetricsDeps {
  /** Jobs by state, and when the oldest queued one was accepted (read at each scrape). */
  jobs: { counts(): Promise<Partial<Record<JobState, number>>>; oldestQueuedAt(): Promise<number | undefined> };
  /** Replies by state (read at each scrape). */
  replies?: { counts(): Promise<Record<string, number>> };
  /** How many API keys Cast refused and are held now. */
  heldKeys: () => number;
  /** Numbers on the locations' opt-out lists, by who listed them (read at each scrape). */
  optOuts?: { counts(): Promise<Record<OptOutBy, number>> };
  now: () => number;
  /** Node's own process metrics (memory, CPU, event loop, GC) as well: serve with /metrics on. */
  processMetrics?: boolean;
}

/** What outbound processing tells the metrics: a message done with, a receipt come in. */
export interface MessageMetrics {
  finished(job: Pick<Job, "outcome" | "errorCode">): void;
  receipt(delayMs: number, outcome: "delivered" | "failed"): void;
}

/** States of a job still in the queue: the rest (done, dead) are history. */
const QUEUE_STATES: readonly JobState[] = ["queued", "sending", "reporting"];

/**
 * bridge's Prometheus metrics, in a registry of their own (not prom-client's global one:
 * each core, and each test's, has its own). Counters and histograms are fed as things
 * happen; the queue and held keys are read when scraped.
 */
export function createMetrics(deps: MetricsDeps) {
  const registry = new Registry();
  const registers = [registry];
  if (deps.processMetrics) collectDefaultMetrics({ register: registry });

  const { messages, callSeconds, callErrors, receiptSeconds, balance } = instruments(registers);
  queueGauges(deps, registers);

  return {
    contentType: registry.contentType,
    /** The exposition text of every metric, scraped now. */
    render: (): Promise<string> => registry.metrics(),
    /** The clients' observer: every HTTP call with a remote. */
    call(call: CallRecord): void {
      const labels = { remote: call.remote, operation: call.operation };
      callSeconds.observe(labels, call.ms / 1000);
      if (!call.ok) callErrors.inc({ ...labels, kind: call.error ?? "other" });
    },
    finished(job: Pick<Job, "outcome" | "errorCode">): void {
      const outcome = job.outcome ?? "failed";
      messages.inc({ outcome, reason: outcome === "delivered" ? "" : (job.errorCode ?? "") });
    },
    receipt(delayMs: number, outcome: "delivered" | "failed"): void {
      receiptSeconds.observe({ outcome }, Math.max(0, delayMs) / 1000);
    },
    /** A balance call answered: the key is shown masked, as everywhere else. */
    balance(apiKey: string, credits: number): void {
      balance.set({ key: maskSecret(apiKey) }, credits);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** The counters and histograms fed as things happen, and the balance gauge set at each balance call. */
function instruments(registers: Registry[]) {
  const messages = new Counter({
    name: "bridge_messages_total",
    help: "Messages bridge is done with, by final outcome and reason (the error code; empty when delivered)",
    labelNames: ["outcome", "reason"] as const,
    registers,
  });
  const callSeconds = new Histogram({
    name: "bridge_remote_call_seconds",
    help: "HTTP calls to HighLevel (crm) and Cast (cast), answered or not, by operation",
    labelNames: ["remote", "operation"] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const callErrors = new Counter({
    name: "bridge_remote_call_errors_total",
    help: "Calls to HighLevel and Cast that got no answer or a 5xx, by kind (dns, refused, tls, timeout, reset, http, other)",
    labelNames: ["remote", "operation", "kind"] as const,
    registers,
  });
  const receiptSeconds = new Histogram({
    name: "bridge_receipt_delay_seconds",
    help: "Time from a message's send to its final delivery receipt, by outcome",
    labelNames: ["outcome"] as const,
    buckets: [5, 10, 30, 60, 120, 300, 600, 1800, 3600],
    registers,
  });
  const balance = new Gauge({
    name: "bridge_gateway_balance_credits",
    help: "Credits of each Cast API key (masked), as its last balance call answered",
    labelNames: ["key"] as const,
    registers,
  });
  return { messages, callSeconds, callErrors, receiptSeconds, balance };
}

/** The gauges read from the database and memory at each scrape. */
function queueGauges(deps: MetricsDeps, registers: Registry[]): void {
  new Gauge({
    name: "bridge_queue_jobs",
    help: "Messages in the queue by state: queued (waiting to be sent), sending, reporting (awaiting a receipt or the report to HighLevel)",
    labelNames: ["state"] as const,
    registers,
    async collect() {
      const counts = await deps.jobs.counts();
      for (const state of QUEUE_STATES) this.set({ state }, counts[state] ?? 0);
    },
  });
  new Gauge({
    name: "bridge_queue_oldest_waiting_seconds",
    help: "Age of the oldest message still waiting to be sent (0 when none waits)",
    registers,
    async collect() {
      const at = await deps.jobs.oldestQueuedAt();
      this.set(at === undefined ? 0 : Math.max(0, deps.now() - at) / 1000);
    },
  });
  new Gauge({
    name: "bridge_inbound_messages",
    help: "Replies bridge took, by state: unrouted, queued, posting, done (posted to HighLevel), dead (not posted, or delivery unknown)",
    labelNames: ["state"] as const,
    registers,
    async collect() {
      for (const [state, n] of Object.entries((await deps.replies?.counts()) ?? {})) this.set({ state }, n);
    },
  });
  new Gauge({
    name: "bridge_opt_outs",
    help: "Numbers on the locations' opt-out lists, by who put them there (reply: a stop word; operator; page: a location admin on the settings page)",
    labelNames: ["by"] as const,
    registers,
    async collect() {
      const counts = await deps.optOuts?.counts();
      for (const by of OPT_OUT_BY) this.set({ by }, counts?.[by] ?? 0);
    },
  });
  new Gauge({
    name: "bridge_held_keys",
    help: "Cast API keys held because Cast refused them (401, 402, 403): their messages wait",
    registers,
    collect() {
      this.set(deps.heldKeys());
    },
  });
}
