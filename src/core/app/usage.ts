import type { Usage } from "../../store/types.ts";
import type { SettingsCore } from "./settings.ts";

/** The Philippines keeps UTC+8 all year: a month there starts 8 hours before the UTC one. */
const MANILA_OFFSET_MS = 8 * 3_600_000;

/** The month (`YYYY-MM`) `now` is in, in Asia/Manila time, and when it began (ms since the epoch). */
export function manilaMonth(now: number): { month: string; since: number } {
  const local = new Date(now + MANILA_OFFSET_MS);
  const year = local.getUTCFullYear();
  const month = local.getUTCMonth();
  return { month: `${year}-${String(month + 1).padStart(2, "0")}`, since: Date.UTC(year, month, 1) - MANILA_OFFSET_MS };
}

/** The location's own use this month: its messages, their SMS parts, and how many were delivered and failed. */
export async function usageOf(core: Pick<SettingsCore, "messages" | "now">, locationId: string): Promise<Usage & { month: string }> {
  const { month, since } = manilaMonth(core.now());
  return { month, ...await core.messages.usage(locationId, since) };
}
