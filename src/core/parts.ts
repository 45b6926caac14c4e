import type { OutboundMessage } from "../store/types.ts";

/** The text as sent: the message, then each attachment URL on its own line. */
export function composeText(message: OutboundMessage): string {
  return [message.message, ...message.attachments].filter((part) => part !== "").join("\n");
}

/**
 * How many SMS parts a text costs (each part is one Cast credit). GSM 03.38 text:
 * 160 septets in one part, 153 per part once split; the extension characters take two
 * septets each. Anything outside it (emoji, most accents) makes the whole message
 * UCS-2: 70 characters in one part, 67 per part, an astral character counting as two.
 */
export function smsParts(text: string): { parts: number; encoding: "GSM-7" | "UCS-2" } {
  let septets = 0;
  for (const char of text) {
    if (GSM_BASIC.has(char)) septets += 1;
    else if (GSM_EXTENSION.has(char)) septets += 2;
    else return { parts: count(text.length, 70, 67), encoding: "UCS-2" }; // length: UTF-16 code units
  }
  return { parts: count(septets, 160, 153), encoding: "GSM-7" };
}

function count(units: number, single: number, perPart: number): number {
  if (units === 0) return 0;
  return units <= single ? 1 : Math.ceil(units / perPart);
}

const GSM_BASIC = new Set(
  "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\u001bÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà",
);
const GSM_EXTENSION = new Set("^{}\\[~]|€\f");
