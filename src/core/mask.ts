/** How long the visible head of a masked secret is (spec 2.2). */
const VISIBLE = 12;

/** "" stays ""; otherwise the first 12 characters followed by "...". */
export function maskSecret(secret: string): string {
  return secret === "" ? "" : `${secret.slice(0, VISIBLE)}...`;
}
