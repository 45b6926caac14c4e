import { createDecipheriv, createHash } from "node:crypto";

/**
 * HighLevel's signed-in user, as its Custom Page hands it over (REQUEST_USER_DATA_RESPONSE),
 * the fields bridge reads (https://marketplace.gohighlevel.com/docs/other/user-context-marketplace-apps).
 */
export interface HighLevelUser {
  userId: string;
  companyId: string;
  /** "admin" or "user": only an admin changes the location's settings. */
  role: string;
  /** "agency" or "account". */
  type: string;
  /** The sub-account the page is opened in; absent when opened at the agency level. */
  activeLocation: string;
  userName: string;
  email: string;
}

const SALTED = Buffer.from("Salted__");

/**
 * Opens CryptoJS's passphrase format (`CryptoJS.AES.encrypt(text, passphrase)`): base64 of
 * `Salted__`, an 8-byte salt and AES-256-CBC ciphertext, key and IV from OpenSSL's
 * EVP_BytesToKey with MD5. undefined: not that format, or not this secret's (the PKCS#7
 * padding check fails), or not UTF-8 text. CBC carries no tag, so a tampered payload may
 * still open: parseUser refuses what is not the user's JSON.
 */
export function decryptPayload(payload: string, secret: string): string | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(payload)) return undefined;
  const bytes = Buffer.from(payload, "base64");
  if (bytes.length < 32 || (bytes.length - 16) % 16 !== 0 || !bytes.subarray(0, 8).equals(SALTED)) return undefined;
  const { key, iv } = bytesToKey(Buffer.from(secret, "utf8"), bytes.subarray(8, 16));
  try {
    const decipher = createDecipheriv("aes-256-cbc", key, iv);
    const plain = Buffer.concat([decipher.update(bytes.subarray(16)), decipher.final()]);
    return new TextDecoder("utf-8", { fatal: true }).decode(plain);
  } catch {
    return undefined;
  }
}

/** The user of a decrypted payload, or why it is not one (a reason holding none of its text). */
export function parseUser(json: string): HighLevelUser | string {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return "the decrypted payload is not JSON";
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return "the decrypted payload is not a JSON object";
  const fields = value as Record<string, unknown>;
  const user: Partial<Record<keyof HighLevelUser, string>> = {};
  for (const name of ["userId", "companyId", "role", "type", "activeLocation", "userName", "email"] as const) {
    const field = fields[name];
    if (field !== undefined && typeof field !== "string") return `the payload's ${name} is not a string`;
    user[name] = field ?? "";
  }
  if (!user.userId) return "the payload names no userId";
  if (!user.activeLocation) return "the payload names no activeLocation: open the page inside a sub-account";
  return user as HighLevelUser;
}

/** EVP_BytesToKey(MD5, one round): 32 bytes of key, then 16 of IV. */
function bytesToKey(secret: Buffer, salt: Buffer): { key: Buffer; iv: Buffer } {
  const blocks: Buffer[] = [];
  let last = Buffer.alloc(0);
  while (blocks.length * 16 < 48) {
    last = createHash("md5").update(Buffer.concat([last, secret, salt])).digest();
    blocks.push(last);
  }
  const all = Buffer.concat(blocks);
  return { key: all.subarray(0, 32), iv: all.subarray(32, 48) };
}
