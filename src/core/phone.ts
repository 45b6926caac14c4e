import { parsePhoneNumberFromString } from "libphonenumber-js/mobile";

/** What a phone number is written with: digits, one leading +, spaces, dots, dashes, brackets. */
const PHONE_CHARACTERS = /^\+?[\d ().-]+$/;

/**
 * Philippine mobile numbers between the CRM's E.164 (+639171234567) and the
 * gateway's local form (09171234567). The "mobile" metadata of libphonenumber-js
 * knows the real PH mobile ranges, so landlines and foreign numbers are refused
 * instead of being mangled by a prefix table.
 */
export function toLocalPH(phone: string): string | undefined {
  // libphonenumber reads a number out of the text around it ("+639171234567\n[error] …",
  // "+639171234567 call me"): a phone with anything else in it is not what it seems, so
  // no number is read from it.
  const written = phone.trim();
  if (!PHONE_CHARACTERS.test(written)) return undefined;
  const parsed = parsePhoneNumberFromString(written, "PH");
  if (!parsed || parsed.country !== "PH" || !parsed.isValid()) return undefined;
  return `0${parsed.nationalNumber}`;
}

/** The local form (or any PH mobile form) back to E.164, for inbound messages. */
export function toE164PH(phone: string): string | undefined {
  const local = toLocalPH(phone);
  return local && `+63${local.slice(1)}`;
}
