import type { OptOutStore } from "../store/contract.ts";
import { toE164PH } from "./phone.ts";

/** A location's opt-out list: numbers that asked for no more texts. */
export interface OptOutList {
  /** Puts `phone` (E.164) on `locationId`'s list; `by` says who: a stop-word reply or an operator. */
  add(locationId: string, phone: string, by: "reply" | "operator"): Promise<void>;
  /** Takes `phone` off the list (START/UNSTOP, or an operator). */
  remove(locationId: string, phone: string): Promise<void>;
  /** True when a send to `phone` from `locationId` must not go. */
  has(locationId: string, phone: string): Promise<boolean>;
}

/**
 * The number a list is keyed by: E.164 for a Philippine mobile in any of its forms
 * (`09171234567`, `+63 917 123 4567`), so that a STOP from one form blocks a send to
 * another; any other number as written, trimmed (no send can go to it anyway).
 */
export function optOutKey(phone: string): string {
  // Already the key (HighLevel's form, read at every send): the same answer, without a parse.
  if (E164_PH.test(phone)) return phone;
  return toE164PH(phone) ?? phone.trim();
}

const E164_PH = /^\+639\d{9}$/;

/** The OptOutList the inbound room and delivery use, over the store; `now` stamps each addition. */
export function createOptOutList(store: Pick<OptOutStore, "add" | "remove" | "has">, now: () => number): OptOutList {
  return {
    async add(locationId, phone, by) {
      await store.add({ locationId, phone: optOutKey(phone), by, at: now() });
    },
    async remove(locationId, phone) {
      await store.remove(locationId, optOutKey(phone));
    },
    async has(locationId, phone) {
      return await store.has(locationId, optOutKey(phone));
    },
  };
}
