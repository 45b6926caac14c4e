import { AppError } from "./errors.ts";

/** Marks a value sealed with AES-256-GCM; anything else is stored plain. */
const PREFIX = "enc:v1:";

export interface Sealer {
  seal(plain: string): string;
  open(stored: string): string;
}

/**
 * Encryption at rest of tokens and API keys, when BRIDGE_ENCRYPTION_KEY is set.
 * Plain values written before the key was set stay readable and are sealed on
 * their next write; a sealed value with no key or the wrong key is a clear error.
 */
export function createSealer(key: Buffer | undefined): Sealer {
  if (!key) {
    return {
      seal: (plain) => plain,
      open(stored) {
        if (stored.startsWith(PREFIX)) throw sealError("the database holds encrypted secrets: set BRIDGE_ENCRYPTION_KEY");
        return stored;
      },
    };
  }
  // Loaded only when there is a key: node:crypto costs ~5 ms of every CLI command's start-up.
  const { createCipheriv, createDecipheriv, randomBytes } = process.getBuiltinModule("node:crypto");
  return {
    seal(plain) {
      if (plain === "") return plain;
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const sealed = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return `${PREFIX}${iv.toString("base64")}:${cipher.getAuthTag().toString("base64")}:${sealed.toString("base64")}`;
    },
    open(stored) {
      if (!stored.startsWith(PREFIX)) return stored;
      const [iv = "", tag = "", data = ""] = stored.slice(PREFIX.length).split(":");
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"));
        decipher.setAuthTag(Buffer.from(tag, "base64"));
        return Buffer.concat([decipher.update(Buffer.from(data, "base64")), decipher.final()]).toString("utf8");
      } catch {
        throw sealError("BRIDGE_ENCRYPTION_KEY is not the key this database was encrypted with");
      }
    },
  };
}

/** A 32-byte key written as 64 hex characters or as base64; undefined when unreadable. */
export function parseEncryptionKey(text: string): Buffer | undefined {
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  return key.length === 32 ? key : undefined;
}

/**
 * 503 when the server meets it: a CLI command run with the key sealed a value that a
 * `serve` started without it cannot read. Its jobs wait (and are retried) until
 * `serve` restarts with the key; nothing is lost.
 */
function sealError(message: string): AppError {
  return new AppError("ENCRYPTION_KEY", message, { status: 503 });
}
