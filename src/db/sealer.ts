import { AppError } from "../errors.ts";

/** Sealed by bridge before values were bound to their place: no associated data. Read, never written. */
const V1 = "enc:v1:";
/** Sealed with AES-256-GCM, bound to its table, column and row: `enc:v2:<key id>:<iv>:<tag>:<data>`. */
const V2 = "enc:v2:";

/**
 * Where a sealed value is stored; it opens only there. Table and column are names
 * from the code (no dots), so `table.column.row`, the associated data, is unambiguous.
 */
export interface SealContext {
  table: string;
  column: string;
  row: string;
}

export interface Sealer {
  seal(plain: string, context: SealContext): string;
  open(stored: string, context: SealContext): string;
  /**
   * Whether `stored` is plain or sealed with this key, by the key id it carries (an
   * enc:v1 value, which carries none, is opened): what the start-up check asks of
   * every value, without decrypting each. Not whether it opens in its place.
   */
  fits(stored: string): boolean;
}

/**
 * Why a sealed value cannot be opened. All three are 503 with code ENCRYPTION_KEY: a job
 * that meets one waits and is tried again until an operator mends it, nothing is lost.
 * "misplaced": the key is right but the value was sealed for another row or column (or
 * altered), so it is refused: a refresh token copied into `sms_api_key` must never
 * travel to the gateway as an API key.
 */
export class SealError extends AppError {
  readonly reason: "no_key" | "wrong_key" | "misplaced";

  constructor(reason: SealError["reason"], message: string) {
    super("ENCRYPTION_KEY", message);
    this.name = "SealError";
    this.reason = reason;
  }
}

/** What the operator does about a value the key does not open. */
export const MEND_SEALED =
  "store it again (a location's API key: `bridge config set LOCATION_ID --sms-api-key -`; its tokens: reinstall the app), or, if an earlier key sealed it, `bridge rekey` from that key to this one";

/**
 * Encryption at rest of tokens and API keys, when BRIDGE_ENCRYPTION_KEY is set.
 * Plain values written before the key was set stay readable and are sealed on
 * their next write; a sealed value with no key or the wrong key is a clear error.
 */
export function createSealer(key: Buffer | undefined): Sealer {
  if (!key) return plainSealer();
  // Loaded only when there is a key: node:crypto would otherwise slow every CLI command's start-up.
  const crypto = process.getBuiltinModule("node:crypto");
  const secret = key;
  // Names the key without revealing it, so a value sealed with another key is told
  // apart from one moved to another row (both fail GCM's check alike).
  const keyId = crypto.createHmac("sha256", key).update("bridge sealer key id").digest().subarray(0, 6).toString("base64");
  // The place is named: one value sealed with another key (a CLI command run with an
  // old key) stops only what needs it, and the operator must know which one to mend.
  const wrongKey = ({ table, column, row }: SealContext) =>
    new SealError("wrong_key", `${table}.${column} of ${row}: BRIDGE_ENCRYPTION_KEY is not the key this value was sealed with`);
  return {
    seal(plain, context) {
      if (plain === "") return plain;
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv("aes-256-gcm", secret, iv).setAAD(associatedData(context));
      const sealed = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return `${V2}${keyId}:${iv.toString("base64")}:${cipher.getAuthTag().toString("base64")}:${sealed.toString("base64")}`;
    },
    open(stored, context) {
      if (stored.startsWith(V1)) {
        const plain = decrypt(stored.slice(V1.length).split(":"), undefined);
        if (plain === undefined) throw wrongKey(context);
        return plain;
      }
      if (!stored.startsWith(V2)) return stored;
      const [id, ...parts] = stored.slice(V2.length).split(":");
      if (id !== keyId) throw wrongKey(context);
      const plain = decrypt(parts, associatedData(context));
      if (plain === undefined) throw misplaced(context);
      return plain;
    },
    fits(stored) {
      if (stored.startsWith(V1)) return decrypt(stored.slice(V1.length).split(":"), undefined) !== undefined;
      return !stored.startsWith(V2) || stored.slice(V2.length).split(":", 1)[0] === keyId;
    },
  };

  /** The plain text, or undefined when GCM's check fails. */
  function decrypt([iv = "", tag = "", data = ""]: string[], aad: Buffer | undefined): string | undefined {
    try {
      const decipher = crypto.createDecipheriv("aes-256-gcm", secret, Buffer.from(iv, "base64"));
      if (aad) decipher.setAAD(aad);
      decipher.setAuthTag(Buffer.from(tag, "base64"));
      return Buffer.concat([decipher.update(Buffer.from(data, "base64")), decipher.final()]).toString("utf8");
    } catch {
      return undefined;
    }
  }
}

/** No key: values are stored plain, and a sealed one found is an error that says so. */
function plainSealer(): Sealer {
  return {
    seal: (plain) => plain,
    fits: (stored) => !stored.startsWith(V1) && !stored.startsWith(V2),
    open(stored) {
      if (stored.startsWith(V1) || stored.startsWith(V2)) {
        throw new SealError("no_key", "the database holds encrypted secrets: set BRIDGE_ENCRYPTION_KEY");
      }
      return stored;
    },
  };
}

/** A 32-byte key written as 64 hex characters or as base64; undefined when unreadable. */
export function parseEncryptionKey(text: string): Buffer | undefined {
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  return key.length === 32 ? key : undefined;
}

function associatedData({ table, column, row }: SealContext): Buffer {
  return Buffer.from(`${table}.${column}.${row}`, "utf8");
}

function misplaced({ table, column, row }: SealContext): SealError {
  const why = "the stored value was sealed for another row or column, or altered, so it is not used; store it again";
  return new SealError("misplaced", `${table}.${column} of ${row}: ${why}`);
}
