/**
 * A location whose gateway is "android" sends through its phone. To the queue a phone is
 * a key like Cast's: `android:<device id>`. The send's claim, the holds, the receipt
 * looks and the scheduler's per-key budget (ANDROID_MESSAGES_PER_MINUTE and _PER_HOUR for a
 * phone) then work for it unchanged, and `createGateways` (delivery/phones.ts) routes each
 * call by its key.
 */
const PREFIX = "android:";

export function phoneKey(deviceId: string): string {
  return `${PREFIX}${deviceId}`;
}

/** The device a phone's key names; undefined for Cast's keys. */
export function deviceOf(key: string): string | undefined {
  return key.startsWith(PREFIX) ? key.slice(PREFIX.length) : undefined;
}
