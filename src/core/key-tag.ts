import { createHash } from "node:crypto";

/** Names an API key without storing it: which key a job's attempts used, which key is held. */
export function keyTag(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex").slice(0, 16);
}
