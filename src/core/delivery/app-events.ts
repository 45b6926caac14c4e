import { z } from "zod";
import { type AppError, errorMessage } from "../../errors.ts";
import { ID_PATTERN, ID_RULE } from "../ids.ts";
import type { LaterInstaller } from "../installs/install-later.ts";
import type { CompanyUninstaller } from "../installs/uninstall-company.ts";
import type { UninstallResult, Uninstaller } from "../installs/uninstall.ts";
import type { Logger } from "../log.ts";
import { badWebhook, notStored, type IntakeAnswer } from "./webhook-answers.ts";

export interface AppEventDeps {
  log: Logger;
  /** This app's id: only its INSTALL and UNINSTALL events count. */
  appId: string;
  installLocation: LaterInstaller;
  uninstall: Uninstaller;
  uninstallCompany: CompanyUninstaller;
}

const id = z.string().trim().regex(ID_PATTERN, ID_RULE);
const appEventSchema = z.object({ appId: z.unknown().optional(), locationId: id.optional(), companyId: id.optional() });

/** The INSTALL and UNINSTALL webhooks, which intake (intake.ts) hands to installs. */
export function createAppEvents(deps: AppEventDeps) {
  return {
    install: (body: unknown) => install(deps, body),
    uninstall: (body: unknown) => uninstall(deps, body),
  };
}

/**
 * INSTALL of a location HighLevel added the app to after the agency's install. Only
 * our own appId counts, as for UNINSTALL. "retry" becomes NOT_STORED, which HighLevel
 * sends again, so an INSTALL that came too early is not lost.
 */
async function install(deps: AppEventDeps, body: unknown): Promise<IntakeAnswer> {
  const event = appEvent(deps, "INSTALL", body);
  if (!event) return { status: "ignored" };
  const { locationId, companyId } = event;
  if (!locationId) {
    // The agency-level install itself: its OAuth callback brings the company token.
    deps.log.info(`INSTALL of company ${companyId ?? "(none)"} (agency-wide): its locations come with the agency's install`);
    return { status: "ok" };
  }
  const verdict = await deps.installLocation(locationId, companyId);
  if (verdict === "retry") throw notStored("the install could not be applied yet");
  return { status: verdict === "installed" || verdict === "already_installed" ? "ok" : "ignored" };
}

/** An app event's ids, or undefined when it is another app's (logged). Bad ids: 400. */
function appEvent(deps: AppEventDeps, type: string, body: unknown): { locationId?: string; companyId?: string } | undefined {
  const event = appEventSchema.safeParse(body);
  if (!event.success) throw badWebhook(`invalid ${type} event: locationId and companyId ${ID_RULE}`);
  const { appId, locationId, companyId } = event.data;
  if (typeof appId === "string" && appId.toLowerCase() === deps.appId.toLowerCase()) return { locationId, companyId };
  const what = locationId ? `location ${locationId}` : `company ${companyId ?? "(none)"}`;
  // Another app's INSTALL is routine (HighLevel sends every app's); another's UNINSTALL is worth a look.
  const note = `${type} of ${what} ignored: its appId ${JSON.stringify(appId)?.slice(0, 100) ?? "(none)"} is not this app's`;
  if (type === "INSTALL") deps.log.info(note);
  else deps.log.warn(note);
  return undefined;
}

/**
 * HighLevel signs every marketplace app's webhooks with the same key, so the signature
 * does not say the event is about this app: only our own appId counts. Even then the
 * event may be a replay: it is applied only once HighLevel confirms it.
 */
async function uninstall(deps: AppEventDeps, body: unknown): Promise<IntakeAnswer> {
  const event = appEvent(deps, "UNINSTALL", body);
  if (!event) return { status: "ignored" };
  const { locationId, companyId } = event;
  if (locationId) return confirmed(deps, `location ${locationId}`, () => deps.uninstall(locationId), "it was not installed");
  if (!companyId) {
    deps.log.warn("UNINSTALL with neither locationId nor companyId ignored");
    return { status: "ignored" };
  }
  // An agency-level UNINSTALL.
  const what = `company ${companyId} (agency-wide)`;
  return confirmed(deps, what, () => deps.uninstallCompany(companyId), "bridge holds neither its token nor a location of it");
}

/** Applies an UNINSTALL once HighLevel confirms it; HighLevel could not be asked: not applied, so not acknowledged. */
async function confirmed(deps: AppEventDeps, what: string, apply: () => Promise<UninstallResult>, notInstalled: string): Promise<IntakeAnswer> {
  let result: UninstallResult;
  try {
    result = await apply();
  } catch (error) {
    deps.log.warn(`UNINSTALL of ${what} not applied yet: HighLevel could not confirm it (${errorMessage(error)}); it will be sent again`);
    throw notStored("could not apply the uninstall");
  }
  if (result.verdict === "recheck") throw recheck(deps, what, result.recheckInMs);
  if (result.verdict === "still_installed") {
    deps.log.warn(`UNINSTALL of ${what} ignored: HighLevel still accepts its token (a replayed or stale event)`);
    return { status: "ignored" };
  }
  if (result.verdict === "not_installed") deps.log.info(`UNINSTALL of ${what}: ${notInstalled}`);
  return { status: "ok" };
}

/**
 * HighLevel accepted the token under a minute ago and is not asked again so soon (each
 * ask spends the refresh token), or its answer came to a refresh that began before this
 * event. This may be a real UNINSTALL right after a replayed one or that refresh, so it
 * is not acknowledged: HighLevel sends it again, when it may be asked.
 */
function recheck(deps: AppEventDeps, what: string, recheckInMs: number): AppError {
  const seconds = Math.ceil(recheckInMs / 1000);
  deps.log.warn(`UNINSTALL of ${what} not applied yet: HighLevel accepted its token under a minute ago, or a refresh begun before this event was asking it; it is asked again when this is sent again (in ${seconds} s or later)`);
  return notStored("the uninstall cannot be confirmed yet", recheckInMs);
}
