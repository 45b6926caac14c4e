/** How long the visible head of a masked secret is (spec 2.2). */
const VISIBLE = 12;

/** "" stays ""; otherwise the first 12 characters followed by "...". */
export function maskSecret(secret: string): string {
  return secret === "" ? "" : `${secret.slice(0, VISIBLE)}...`;
}

/** `+639171234567` -> `0917***4567`; any other number keeps only its first and last four characters. */
export function maskPhone(phone: string): string {
  const ph = /^\+63(\d{10})$/.exec(phone.trim());
  const shown = ph ? `0${ph[1]}` : phone.trim();
  return shown.length > 8 ? `${shown.slice(0, 4)}***${shown.slice(-4)}` : "***";
}
