import { gatewayKey, type GatewayKeyRow as Row } from "../../db/gateway-keys.ts";
import type { Sealer } from "../../db/sealer.ts";
import type { GatewayKeys } from "../contract.ts";
import type { Queryable } from "./pool.ts";

/** Held keys, balances and the keys sends went with, on PostgreSQL (src/db/gateway-keys.ts on SQLite). */
export function pgGatewayKeys(db: Queryable, sealer: Sealer): GatewayKeys {
  const sealedIn = (tag: string) => ({ table: "gateway_keys", column: "api_key", row: tag });
  return {
    async list() {
      return (await db.query<Row>('SELECT * FROM gateway_keys ORDER BY key_masked COLLATE "C"')).rows.map(gatewayKey);
    },
    async keep(tag, masked, apiKey) {
      // Written once per key: the sealed value differs at every seal, the key does not.
      await db.query(`
        INSERT INTO gateway_keys (key_tag, key_masked, api_key) VALUES ($1, $2, $3)
        ON CONFLICT (key_tag) DO UPDATE SET api_key = excluded.api_key WHERE gateway_keys.api_key = ''`, [tag, masked, sealer.seal(apiKey, sealedIn(tag))]);
    },
    async sentWith(tag) {
      const row = (await db.query<Row & { api_key: string }>("SELECT api_key FROM gateway_keys WHERE key_tag = $1 AND api_key <> ''", [tag])).rows[0];
      return row && sealer.open(row.api_key, sealedIn(tag));
    },
    async forgetUnused() {
      const done = await db.query(`
        UPDATE gateway_keys SET api_key = '' WHERE api_key <> '' AND key_tag NOT IN (
          SELECT api_key_tag FROM jobs WHERE state IN ('queued', 'sending', 'reporting') AND api_key_tag IS NOT NULL)`);
      return done.rowCount ?? 0;
    },
    async held(tag, masked, hold) {
      await db.query(`
        INSERT INTO gateway_keys (key_tag, key_masked, held_since, held_status, held_reason) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (key_tag) DO UPDATE SET key_masked = excluded.key_masked, held_since = coalesce(gateway_keys.held_since, excluded.held_since),
          held_status = excluded.held_status, held_reason = excluded.held_reason`, [tag, masked, hold.since, hold.status, hold.reason]);
    },
    async released(tag) {
      await db.query("UPDATE gateway_keys SET held_since = NULL, held_status = NULL, held_reason = NULL WHERE key_tag = $1", [tag]);
    },
    async clearHolds() {
      await db.query("UPDATE gateway_keys SET held_since = NULL, held_status = NULL, held_reason = NULL WHERE held_since IS NOT NULL");
    },
    async balance(tag, masked, at, read) {
      const credits = "credits" in read ? read.credits : null;
      const error = "error" in read ? read.error : null;
      await db.query(`
        INSERT INTO gateway_keys (key_tag, key_masked, balance, balance_at, balance_error) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (key_tag) DO UPDATE SET key_masked = excluded.key_masked, balance = excluded.balance,
          balance_at = excluded.balance_at, balance_error = excluded.balance_error`, [tag, masked, credits, at, error]);
    },
  };
}
