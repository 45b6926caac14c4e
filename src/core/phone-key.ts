/**
 * A driver that has no API key of its own names its keys `<kind>:<id>`: a location whose
 * gateway is "android" sends through its phone, and to the queue a phone is a key like
 * Cast's, `android:<device id>`. The send's claim, the holds, the receipt looks and the
 * scheduler's per-key budget then work for it unchanged, and the registry
 * (clients/registry.ts) gives each call to the driver its key names.
 */
const SEPARATOR = ":";
const ANDROID = "android";

/** The key of `id` (a device, say) of the driver of `kind`. */
export function driverKey(kind: string, id: string): string {
  return `${kind}${SEPARATOR}${id}`;
}

/** The kind a key names, and what it names of it; undefined for a gateway account's API key (Cast's). */
export function keyKind(key: string): { kind: string; id: string } | undefined {
  const at = key.indexOf(SEPARATOR);
  return at > 0 ? { kind: key.slice(0, at), id: key.slice(at + 1) } : undefined;
}

export function phoneKey(deviceId: string): string {
  return driverKey(ANDROID, deviceId);
}

/** The device a phone's key names; undefined for Cast's keys. */
export function deviceOf(key: string): string | undefined {
  const named = keyKind(key);
  return named?.kind === ANDROID ? named.id : undefined;
}
