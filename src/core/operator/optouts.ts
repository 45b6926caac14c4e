import type { OptOutStore } from "../../store/contract.ts";
import type { OptOutBy } from "../../store/types.ts";
import type { LocationRegistry } from "../../store/contract.ts";
import { AppError, clip, notFound } from "../../errors.ts";
import { toE164PH } from "../phone.ts";
import { iso } from "../duration.ts";
import { maskPhone } from "../mask.ts";
import { printable } from "../printable.ts";

/**
 * A location's opt-out list as the operator reads and changes it (docs/cli.md, "Opt-outs"):
 * one code path for `bridge optouts …` and the admin API. Phones are masked in every
 * answer, as in the message log; the operator names a number whole to add or remove it.
 */
export interface OptOutView {
  /** `0917***4567` */
  phone: string;
  by: OptOutBy;
  opted_out_at: string;
}

/** What an add or a remove did; `added`/`removed` false: nothing changed (it was listed already, or was not listed). */
export interface OptOutChange {
  location_id: string;
  /** `0917***4567` */
  phone: string;
}

export interface OptOutDeps {
  optOuts: Pick<OptOutStore, "list" | "add" | "remove">;
  /** Whether the location is one bridge knows (installed now or before). */
  tokens: Pick<LocationRegistry, "companyOf">;
}

/** The location's list, the newest first. */
export async function listOptOuts(deps: OptOutDeps, locationId: string): Promise<{ location_id: string; opt_outs: OptOutView[] }> {
  await known(deps, locationId);
  const optOuts = (await deps.optOuts.list(locationId)).map((o) => ({ phone: maskPhone(o.phone), by: o.by, opted_out_at: iso(o.at) }));
  return { location_id: locationId, opt_outs: optOuts };
}

/** Puts the number on the list as `by`'s (the operator's, or a location admin's on the page); one listed already keeps who listed it and when. */
export async function addOptOut(deps: OptOutDeps, locationId: string, phone: unknown, now: number, by: OptOutBy = "operator"): Promise<OptOutChange & { added: boolean }> {
  await known(deps, locationId);
  const number = optOutPhone(phone);
  const added = await deps.optOuts.add({ locationId, phone: number, by, at: now });
  return { location_id: locationId, phone: maskPhone(number), added };
}

/** Takes the number off the list, whoever put it there: the location's messages reach it again. */
export async function removeOptOut(deps: OptOutDeps, locationId: string, phone: unknown): Promise<OptOutChange & { removed: boolean }> {
  await known(deps, locationId);
  const number = optOutPhone(phone);
  return { location_id: locationId, phone: maskPhone(number), removed: await deps.optOuts.remove(locationId, number) };
}

/** A Philippine mobile number in any form, as the list keys it (E.164); anything else is refused. */
export function optOutPhone(phone: unknown): string {
  if (typeof phone !== "string") throw new AppError("BAD_PHONE", "phone must be a string: a Philippine mobile number");
  const number = toE164PH(phone);
  // Masked as everywhere a recipient's phone is written (docs/operations.md, "Finding a message").
  if (!number) throw new AppError("BAD_PHONE", `not a Philippine mobile number: ${printable(maskPhone(clip(phone, 40)))}`);
  return number;
}

async function known(deps: OptOutDeps, locationId: string): Promise<void> {
  if (await deps.tokens.companyOf(locationId) === undefined) throw notFound(locationId);
}
