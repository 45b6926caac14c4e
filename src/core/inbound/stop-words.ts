/** Replies that opt a number out of a location's texts. */
const STOP = new Set(["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "HINTO"]);
/** Replies that lift an opt-out. */
const START = new Set(["START", "UNSTOP"]);

/**
 * What a reply asks of its sender's opt-out: "stop", "start", or nothing. Only a whole
 * message counts ("stop sending at 5" is a message, not an opt-out), in any case, with
 * spaces and punctuation around it ignored.
 */
export function optOutWord(text: string): "stop" | "start" | undefined {
  const word = text.replace(/^[\s\p{P}]+|[\s\p{P}]+$/gu, "").toUpperCase();
  if (STOP.has(word)) return "stop";
  if (START.has(word)) return "start";
  return undefined;
}
