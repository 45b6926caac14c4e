import type { H3Event } from "h3";
import type { ErrorCode } from "../errors.ts";
import type { InstallResult } from "../core/installs/install.ts";

/** An install that did not happen: its answer to a script (`text`), and to a person. */
export interface InstallFailure {
  status: number;
  /** The plain-text answer, the spec's exact words. */
  text: string;
  /** What happened and what to do, for the person HighLevel sent back here. */
  advice: Advice;
  headers?: Record<string, string>;
}

export interface Advice {
  happened: string;
  todo: string;
}

const AGAIN = "Start the install again from HighLevel; if it fails again, tell the operator of this bridge what this page says.";

/** What to tell a person whose install failed with an AppError of `code`. */
export const INSTALL_ADVICE: Partial<Record<ErrorCode, Advice>> = {
  COMPANY_NOT_ALLOWED: {
    happened: "This company may not install this app on this bridge.",
    todo: "Ask the operator of this bridge to allow your company (its ID is below), then install again from HighLevel.",
  },
  TOKEN_EXCHANGE_FAILED: {
    happened: "HighLevel did not accept the install's authorization code: it may have expired or been used already.",
    todo: AGAIN,
  },
  NO_LOCATION_ID: { happened: "HighLevel's answer did not say which location was installed.", todo: AGAIN },
  NO_COMPANY_ID: { happened: "HighLevel's answer did not say which agency installed the app.", todo: AGAIN },
  SAVE_FAILED: {
    happened: "bridge could not save the connection to this location.",
    todo: "Tell the operator of this bridge (its log says why), then install again from HighLevel.",
  },
  BULK_INSTALL_FAILED: { happened: "bridge could not get this agency's locations from HighLevel.", todo: AGAIN },
};

export const UNKNOWN_FAILURE: Advice = { happened: "The install did not complete.", todo: AGAIN };

/**
 * The answer to a failed install: an HTML page for a browser (a person followed
 * HighLevel's link and must learn what to do), the plain text otherwise (scripts and
 * tests read it). The status is the same either way.
 */
export function failureAnswer(event: H3Event, failure: InstallFailure): Response {
  const headers = failure.headers ?? {};
  if (!wantsHtml(event)) return respond(failure.status, failure.text, "text/plain", headers);
  const { happened, todo } = failure.advice;
  const detail = `<p>${escape(happened)}</p>
<p>What bridge was told: <code>${escape(failure.text)}</code></p>
<p>${escape(todo)}</p>`;
  return respond(failure.status, html("bridge is not installed", detail), "text/html", headers);
}

/**
 * What an agency sees after its install: how many locations were connected, and each
 * that was not, with why (HighLevel's words, escaped), so nobody has to read the log.
 */
export function companyPage(result: Extract<InstallResult, { kind: "company" }>): Response {
  const { saved, total, failed } = result;
  const summary = result.approved
    ? `The SMS provider is connected to ${saved} location(s) of ${total}.`
    : `The SMS provider is installed on ${saved} location(s) of ${total}. ${PENDING}`;
  if (failed.length === 0) return page(titleOf(result), `${summary} You can close this tab.`);
  const items = failed.map((f) => `<li><code>${escape(f.locationId)}</code>: ${escape(f.reason)}</li>`).join("\n");
  const more = `<p>${escape(`${failed.length} location(s) could not be connected:`)}</p>
<ul>
${items}
</ul>
<p>bridge tries them again at its next reconciliation (hourly, or now with <code>bridge locations sync</code>); installing again from the agency retries them too.</p>`;
  return page(titleOf(result), summary, more);
}

/** What a user sees after installing one location: connected, or waiting for the operator's approval. */
export function locationPage(result: Extract<InstallResult, { kind: "location" }>): Response {
  if (result.approved) return page("bridge is installed", "The SMS provider is connected to this location. You can close this tab.");
  return page(titleOf(result), `The SMS provider is installed on this location. ${PENDING} You can close this tab.`);
}

/**
 * A location not approved sends nothing on the operator's key: "connected" would promise
 * SMS that fail until the operator acts (docs/configuration.md, "Who may use your gateway key").
 */
const PENDING =
  "It sends SMS once the operator of this SMS service approves it, or at once with the location's own Cast.ph API key (set it on the SMS settings page in HighLevel).";

function titleOf(result: InstallResult): string {
  return result.approved ? "bridge is installed" : "bridge is installed, waiting for approval";
}

/** A 200 page; `extra` is HTML already escaped by the caller. */
export function page(title: string, message: string, extra = ""): Response {
  return respond(200, html(title, `<p>${escape(message)}</p>${extra}`), "text/html");
}

// A browser's navigation asks for text/html; fetch, curl and HighLevel's checks do not.
function wantsHtml(event: H3Event): boolean {
  return (event.req.headers.get("accept") ?? "").includes("text/html");
}

/** `body` is HTML already escaped by the caller. */
function html(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>
<body><h1>${escape(title)}</h1>${body}</body></html>
`;
}

function respond(status: number, body: string, type: string, headers: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { "content-type": `${type}; charset=utf-8`, ...headers } });
}

function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
