import type { PhoneDescription } from "../../store/types.ts";

/** What a location shows of its gateway: the phone's password and signing key only as whether they are set. */
export interface PhoneView {
  gateway: "cast" | "android";
  android_url: string;
  android_user: string;
  android_device: string;
  android_password: string;
  android_signing_key: string;
}

/** Nothing for a location whose gateway was never set: its view stays as before there were two. */
export function phoneView(described: PhoneDescription | undefined): PhoneView | undefined {
  if (!described) return undefined;
  return {
    gateway: described.gateway,
    android_url: described.url,
    android_user: described.user,
    android_device: described.deviceId,
    // Never a head of it, as keys are shown: a phone's password is often short enough to show whole.
    android_password: described.passwordSet ? "(set)" : "",
    android_signing_key: described.signingKeySet ? "(set)" : "",
  };
}
