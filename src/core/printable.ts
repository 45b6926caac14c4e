/**
 * Text from outside reaches the operator: a location's name in HighLevel, a webhook's
 * phone, an error body of HighLevel or Cast. A terminal obeys the control characters in
 * it (ESC starts sequences that set the window title, clear the screen or write the
 * clipboard: OSC 52), a newline forges a log line of its own, and bidi overrides show
 * text in another order than it is. These functions make such text inert.
 */

/**
 * C0 (with TAB, CR, LF and ESC), DEL, C1 (U+0080-U+009F: U+009B is a CSI of its own),
 * the line and paragraph separators, and the bidi embeddings, overrides and isolates.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_RUNS = new RegExp(`${UNSAFE.source}+`, "g");

/** What JSON.stringify leaves raw of UNSAFE: it escapes C0 itself. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * One value as a person may see it, on one line: each unsafe character becomes a visible
 * escape (`\n`, `\x1b`, `\u202e`). A backslash stays as it is: the escapes are for the
 * eye, not to be read back.
 */
export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => NAMED[c] ?? escapeCode(c));
}

/**
 * JSON text with the characters JSON.stringify leaves raw but a terminal may still obey
 * written as `\u` escapes: the same JSON value, safe to `cat` or `curl`.
 */
export function printableJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => `\\u${hex(c, 4)}`);
}

/** A name to store: each run of unsafe characters becomes one space; trimmed. */
export function withoutControls(text: string): string {
  return text.replace(UNSAFE_RUNS, " ").trim();
}

function escapeCode(c: string): string {
  return c.charCodeAt(0) < 0x100 ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`;
}

function hex(c: string, digits: number): string {
  return c.charCodeAt(0).toString(16).padStart(digits, "0");
}
