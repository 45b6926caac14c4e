import type { UsageStore } from "../../store/contract.ts";
import type { MonthOf } from "../../db/usage-month.ts";

/** What the settings page shows of its location's use this month (docs/http.md, "The settings page"). */
export interface PageUsage {
  /** `YYYY-MM`, in USAGE_TIME_ZONE. */
  month: string;
  messages: number;
  /** SMS parts the gateway took. */
  parts: number;
  delivered: number;
  /** Every message reported failed: the refused (opt-out, cap) too. */
  failed: number;
  /** The location's monthly cap of SMS parts; null: none. */
  monthly_cap: number | null;
  /** Parts still to send this month under the cap (sends under way count as taken); null: no cap. */
  left: number | null;
}

/** The location's own use this month, from the usage table, with its cap and what is left of it. */
export async function usageOf(core: { now: () => number; monthOf: MonthOf; usage: Pick<UsageStore, "list" | "capOf" | "used"> }, locationId: string): Promise<PageUsage> {
  const month = core.monthOf(core.now());
  const figures = { messages: 0, parts: 0, delivered: 0, failed: 0 };
  for (const row of await core.usage.list({ locationId, from: month, to: month })) {
    figures.messages += row.messages;
    figures.parts += row.parts;
    figures.delivered += row.delivered;
    figures.failed += row.messages - row.delivered;
  }
  const cap = (await core.usage.capOf(locationId)) ?? null;
  const left = cap === null ? null : Math.max(0, cap - (await core.usage.used(locationId, month)));
  return { month, ...figures, monthly_cap: cap, left };
}
