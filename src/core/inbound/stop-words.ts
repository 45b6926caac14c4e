/** Replies that opt a number out of a location's texts ("STOP ALL", with its space, is STOPALL). */
const STOP = new Set(["STOP", "STOPALL", "STOP ALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "HINTO"]);
/** Replies that lift an opt-out. */
const START = new Set(["START", "UNSTOP"]);

/**
 * What surrounds a word without being part of it: spaces, punctuation, symbols (emoji
 * among them: "STOP 🙏"), and what joins or styles an emoji (ZWJ, variation selectors,
 * the keycap mark).
 */
const AROUND = /^[\s\p{P}\p{S}\p{Cf}\uFE0E\uFE0F\u20E3]+|[\s\p{P}\p{S}\p{Cf}\uFE0E\uFE0F\u20E3]+$/gu;

/**
 * What a reply asks of its sender's opt-out: "stop", "start", or nothing. Only a whole
 * message counts ("stop sending at 5" is a message, not an opt-out), in any case, with
 * spaces, punctuation and emoji around it ignored; spaces inside count as one.
 */
export function optOutWord(text: string): "stop" | "start" | undefined {
  const word = text.normalize("NFKC").replace(AROUND, "").replace(/\s+/gu, " ").toUpperCase();
  if (STOP.has(word)) return "stop";
  if (START.has(word)) return "start";
  return undefined;
}
