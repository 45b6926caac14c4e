import type { AlertStore, GatewayKeys, InboundStore, LocationRegistry, PhoneStore, UsageStore } from "../../store/contract.ts";
import type { MonthOf } from "../../db/usage-month.ts";
import { errorMessage } from "../../errors.ts";
import { postAlert } from "../clients/alert-webhook.ts";
import type { ResolvedConfig } from "../config.ts";
import type { Logger } from "../log.ts";
import type { Outages } from "../operator/outages.ts";
import { keyUsers, needsAttention } from "../operator/status.ts";
import * as conditions from "./conditions.ts";
import { bridgeName } from "../alert-channel.ts";
import { createSender } from "./deliver.ts";
import { createEvaluator } from "./evaluate.ts";
import type { WriteWatch } from "./write-watch.ts";

/** How often serve looks for what needs a person. */
export const LOOK_EVERY_MS = 30_000;
/** After serve starts, no condition ends for this long: its outages and holds are found again by then (a hold's probe: a minute). */
export const WARM_UP_MS = 3 * 60_000;
/** Delivered alerts are kept this long (what waits is kept until delivered). */
const KEEP_DELIVERED_MS = 30 * 86_400_000;

export interface AlertsDeps {
  config: Pick<ResolvedConfig, "alertWebhookUrl" | "baseUrl" | "lowBalanceCredits" | "allowedCompanyIds" | "sms">;
  log: Logger;
  now: () => number;
  alerts: AlertStore;
  outages: Pick<Outages, "list">;
  gatewayKeys: Pick<GatewayKeys, "list">;
  tokens: Pick<LocationRegistry, "listings">;
  phones: Pick<PhoneStore, "describeAll">;
  replies: Pick<InboundStore, "counts">;
  writes: Pick<WriteWatch, "refusal">;
  usage: Pick<UsageStore, "atOrOver">;
  monthOf: MonthOf;
  /** First wait after a failed post (tests). */
  backoffMs?: number;
  /** No condition ends this long after start (default WARM_UP_MS; tests). */
  warmUpMs?: number;
}

export type Alerts = ReturnType<typeof wireAlerts>;

/**
 * Alerts to a person (docs/alerts.md): the conditions' sources, the evaluator that turns
 * them into started/ended alerts, and the loop that posts them to ALERT_WEBHOOK_URL.
 * Nothing runs without the URL. The sources are a list: `addSource` is the hook for one
 * more.
 */
export function wireAlerts(deps: AlertsDeps) {
  const { config, log, now } = deps;
  const url = config.alertWebhookUrl;
  const sources = defaultSources(deps);
  const sender = createSender({ store: deps.alerts, post: (text) => postAlert(url, text, now), log, now, firstBackoffMs: deps.backoffMs, leads: () => leads() });
  const evaluator = createEvaluator({ store: deps.alerts, sources, log, now, name: bridgeName(config.baseUrl), recorded: sender.wake });
  let timer: ReturnType<typeof setInterval> | undefined;
  // Servers sharing a database: only the leader looks and posts (run.ts), so each alert goes once.
  let leads = () => true;

  async function look(): Promise<void> {
    try {
      await evaluator.look();
      await deps.alerts.prune(now() - KEEP_DELIVERED_MS);
    } catch (error) {
      log.warn(`alerts: cannot look for what needs a person: ${errorMessage(error)}`);
    }
  }

  return {
    configured: url !== "",
    /** One more source of conditions, looked at from the next look on. */
    addSource(source: conditions.ConditionSource): void {
      sources.push(source);
    },
    /** Looks now (serve looks every `everyMs`). */
    look,
    /**
     * Serve: looks now and every `everyMs`, and starts the alert loop; nothing without
     * ALERT_WEBHOOK_URL. `leader`: whether this server leads the periodic work now; the
     * others neither look nor post (the alerts wait in the database for whichever leads).
     */
    start(everyMs = LOOK_EVERY_MS, leader: () => boolean = () => true): void {
      if (!url || timer) return;
      leads = leader;
      evaluator.endsFrom(now() + (deps.warmUpMs ?? WARM_UP_MS));
      sender.start();
      const tick = () => void (leads() && look());
      tick();
      timer = setInterval(tick, everyMs);
      timer.unref();
    },
    async stop(): Promise<void> {
      clearInterval(timer);
      timer = undefined;
      await sender.stop();
    },
  };
}

/** Every condition bridge alerts on. */
function defaultSources(deps: AlertsDeps): conditions.ConditionSource[] {
  const { config } = deps;
  const users = async () => conditions.usersByTag(keyUsers(config.sms.apiKey, await deps.tokens.listings()));
  return [
    () => conditions.outageConditions(deps.outages.list()),
    async () => conditions.holdConditions(await deps.gatewayKeys.list(), await users()),
    async () => conditions.balanceConditions(await deps.gatewayKeys.list(), await users(), config.lowBalanceCredits),
    async () => conditions.attentionConditions(await needsAttention({ tokens: deps.tokens, phones: deps.phones, allowedCompanyIds: config.allowedCompanyIds })),
    async () => conditions.unroutedConditions((await deps.replies.counts()).unrouted),
    () => conditions.writeConditions(deps.writes.refusal()),
    // `used` counts the parts of sends claimed and not settled yet: the cap's own figure.
    async () => conditions.capConditions(await deps.usage.atOrOver(deps.monthOf(deps.now()), 80)),
  ];
}
