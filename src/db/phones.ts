import type { Db } from "./index.ts";
import { createSealer, type SealContext, type Sealer } from "./sealer.ts";

/** The gateway a location's messages go through. */
export type GatewayKind = "cast" | "android";

/** A location's gateway and, for "android", its phone (SMS Gateway for Android). */
export interface PhoneSettings {
  locationId: string;
  gateway: GatewayKind;
  /** The app's API: `http://<phone-ip>:8080` (local) or `https://api.sms-gate.app/3rdparty/v1` (cloud). */
  url: string;
  user: string;
  password: string;
  /** Which phone sends: pinned, so a retry under the same message id goes out from the same one. */
  deviceId: string;
  /** The app's webhook signing key: what the phone's webhooks are verified with. */
  signingKey: string;
}

/** What a change sets; an absent field keeps its value. */
export type PhoneChange = Partial<Omit<PhoneSettings, "locationId">>;

/** The settings without their secrets: only whether each is set. */
export type PhoneDescription = Omit<PhoneSettings, "password" | "signingKey"> & { passwordSet: boolean; signingKeySet: boolean };

export type PhoneStore = ReturnType<typeof createPhoneStore>;
/** A row of `location_gateways` as read (the PostgreSQL store reads the same row). */
export type PhoneRow = Row;

interface Row {
  location_id: string;
  gateway: GatewayKind;
  android_url: string;
  android_user: string;
  android_password: string;
  android_device: string;
  android_signing_key: string;
}

/** The secret columns of location_gateways, sealed with BRIDGE_ENCRYPTION_KEY. */
export type PhoneSecret = "android_password" | "android_signing_key";

/** Where a phone's secret is sealed: it opens only in the same column of the same row. */
export function phoneSealedIn(column: PhoneSecret, locationId: string): SealContext {
  return { table: "location_gateways", column, row: locationId };
}

/** The locations' gateway settings (table location_gateways); a location without a row sends through Cast. */
export function createPhoneStore(db: Db, sealer: Sealer = createSealer(undefined)) {
  const selectOne = db.prepare<[string], Row>("SELECT * FROM location_gateways WHERE location_id = ?");
  const selectAll = db.prepare<[], Row>("SELECT * FROM location_gateways");
  const ofDevice = "FROM location_gateways WHERE android_device = ? AND gateway = 'android' ORDER BY location_id";
  const selectDevice = db.prepare<[string], Row>(`SELECT * ${ofDevice}`);
  const selectDeviceLocations = db.prepare<[string], { location_id: string }>(`SELECT location_id ${ofDevice}`);
  const selectAndroid = db.prepare<[], Row>("SELECT * FROM location_gateways WHERE gateway = 'android' ORDER BY location_id");
  // Only a stored location gets a row: the insert selects it from tokens.
  const upsert = db.prepare<[Record<string, string | number | null>]>(UPSERT);
  const open = (row: Row) => fromRow(row, sealer);

  return {
    /** The location's settings; a location never set is on Cast. */
    get(locationId: string): PhoneSettings {
      const row = selectOne.get(locationId);
      return row ? open(row) : { ...NONE, locationId };
    },
    /**
     * The settings as shown (config get, locations list): the secrets only as whether they
     * are set, never opened. Undefined for a location never set (it sends through Cast).
     */
    describe(locationId: string): PhoneDescription | undefined {
      const row = selectOne.get(locationId);
      return row && described(row, sealer);
    },
    /** Every location's settings as describe() shows them, in one read (a listing of all locations). */
    describeAll(): Map<string, PhoneDescription> {
      return new Map(selectAll.all().map((row) => [row.location_id, described(row, sealer)]));
    },
    /** The ids of the locations a phone serves, without opening their secrets (a reply's routing). */
    locationsOfDevice(deviceId: string): string[] {
      return selectDeviceLocations.all(deviceId).map((r) => r.location_id);
    },
    /** The locations a phone sends for (one phone may serve several). */
    byDevice(deviceId: string): PhoneSettings[] {
      return selectDevice.all(deviceId).map(open);
    },
    /** Every location that sends through a phone. */
    android(): PhoneSettings[] {
      return selectAndroid.all().map(open);
    },
    /** Sets what is given; false when the location is unknown. */
    set(locationId: string, change: PhoneChange, now: number): boolean {
      const seal = (value: string | undefined, column: PhoneSecret) =>
        value === undefined ? null : sealer.seal(value, phoneSealedIn(column, locationId));
      return (
        upsert.run({
          id: locationId,
          gateway: change.gateway ?? null,
          url: change.url ?? null,
          user: change.user ?? null,
          password: seal(change.password, "android_password"),
          deviceId: change.deviceId ?? null,
          signingKey: seal(change.signingKey, "android_signing_key"),
          now,
        }).changes > 0
      );
    },
  };
}

/** Sets what a change gives (null: keeps it), for a location in tokens only. */
const UPSERT = `
    INSERT INTO location_gateways (location_id, gateway, android_url, android_user, android_password, android_device, android_signing_key, updated_at)
    SELECT location_id, coalesce(@gateway, 'cast'), coalesce(@url, ''), coalesce(@user, ''), coalesce(@password, ''),
      coalesce(@deviceId, ''), coalesce(@signingKey, ''), @now
    FROM tokens WHERE location_id = @id
    ON CONFLICT (location_id) DO UPDATE SET
      gateway = coalesce(@gateway, gateway), android_url = coalesce(@url, android_url),
      android_user = coalesce(@user, android_user), android_password = coalesce(@password, android_password),
      android_device = coalesce(@deviceId, android_device), android_signing_key = coalesce(@signingKey, android_signing_key),
      updated_at = @now`;

/** A location never set: on Cast. */
export const NONE: Omit<PhoneSettings, "locationId"> = { gateway: "cast", url: "", user: "", password: "", deviceId: "", signingKey: "" };

/** A row as its settings, the secrets opened for their row. */
export function fromRow(row: Row, sealer: Sealer): PhoneSettings {
  return {
    locationId: row.location_id,
    gateway: row.gateway,
    url: row.android_url,
    user: row.android_user,
    password: sealer.open(row.android_password, phoneSealedIn("android_password", row.location_id)),
    deviceId: row.android_device,
    signingKey: sealer.open(row.android_signing_key, phoneSealedIn("android_signing_key", row.location_id)),
  };
}

/** The settings as shown: the secrets only as whether they are set, never opened. */
export function described(row: Row, sealer: Sealer): PhoneDescription {
  const { android_password: password, android_signing_key: signingKey, ...rest } = row;
  return { ...fromRow({ ...rest, android_password: "", android_signing_key: "" }, sealer), passwordSet: password !== "", signingKeySet: signingKey !== "" };
}
