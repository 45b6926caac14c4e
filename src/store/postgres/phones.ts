import { described, fromRow, NONE, phoneSealedIn, type PhoneRow as Row, type PhoneSecret } from "../../db/phones.ts";
import type { Sealer } from "../../db/sealer.ts";
import type { PhoneStore } from "../contract.ts";
import type { Queryable } from "./pool.ts";
import { changed } from "./token-rows.ts";

const OF_DEVICE = "FROM location_gateways WHERE android_device = $1 AND gateway = 'android' ORDER BY location_id COLLATE \"C\"";

/** Sets what a change gives (null: keeps it), for a location in tokens only. */
const UPSERT = `
  INSERT INTO location_gateways (location_id, gateway, android_url, android_user, android_password, android_device, android_signing_key, updated_at)
  SELECT location_id, coalesce($2, 'cast'), coalesce($3, ''), coalesce($4, ''), coalesce($5, ''), coalesce($6, ''), coalesce($7, ''), $8
  FROM tokens WHERE location_id = $1
  ON CONFLICT (location_id) DO UPDATE SET
    gateway = coalesce($2, location_gateways.gateway), android_url = coalesce($3, location_gateways.android_url),
    android_user = coalesce($4, location_gateways.android_user), android_password = coalesce($5, location_gateways.android_password),
    android_device = coalesce($6, location_gateways.android_device),
    android_signing_key = coalesce($7, location_gateways.android_signing_key), updated_at = $8`;

/** The locations' gateway settings on PostgreSQL (src/db/phones.ts on SQLite), the secrets sealed alike. */
export function pgPhones(db: Queryable, sealer: Sealer): PhoneStore {
  const rows = async (sql: string, params: unknown[] = []) => (await db.query<Row>(sql, params)).rows;
  const one = async (locationId: string) => (await rows("SELECT * FROM location_gateways WHERE location_id = $1", [locationId]))[0];
  const open = (row: Row) => fromRow(row, sealer);
  return {
    async get(locationId) {
      const row = await one(locationId);
      return row ? open(row) : { ...NONE, locationId };
    },
    async describe(locationId) {
      const row = await one(locationId);
      return row && described(row, sealer);
    },
    async describeAll() {
      return new Map((await rows("SELECT * FROM location_gateways")).map((row) => [row.location_id, described(row, sealer)]));
    },
    async locationsOfDevice(deviceId) {
      return (await rows(`SELECT location_id ${OF_DEVICE}`, [deviceId])).map((r) => r.location_id);
    },
    byDevice: async (deviceId) => (await rows(`SELECT * ${OF_DEVICE}`, [deviceId])).map(open),
    android: async () => (await rows("SELECT * FROM location_gateways WHERE gateway = 'android' ORDER BY location_id COLLATE \"C\"")).map(open),
    set(locationId, change, now) {
      const seal = (value: string | undefined, column: PhoneSecret) =>
        value === undefined ? null : sealer.seal(value, phoneSealedIn(column, locationId));
      return changed(db, UPSERT, [
        locationId, change.gateway ?? null, change.url ?? null, change.user ?? null, seal(change.password, "android_password"),
        change.deviceId ?? null, seal(change.signingKey, "android_signing_key"), now,
      ]);
    },
  };
}
