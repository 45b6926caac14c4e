import { createCipheriv, randomBytes } from "node:crypto";

/** A value as bridge sealed it before values were bound to their place: enc:v1, no associated data. */
export function sealV1(plain: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return `enc:v1:${iv.toString("base64")}:${cipher.getAuthTag().toString("base64")}:${data.toString("base64")}`;
}
