import { z } from "zod";
import type { PhoneStore } from "../../store/contract.ts";
import type { PhoneChange } from "../../store/types.ts";
import { AppError } from "../../errors.ts";

/**
 * A location's gateway settings as PUT …/config and `bridge config set` take them: which
 * gateway, and for "android" the phone running SMS Gateway for Android (docs/android.md).
 * An absent field keeps its value.
 */
export const phoneFields = {
  gateway: z.enum(["cast", "android"], { error: 'gateway must be "cast" or "android"' }).optional(),
  android_url: z
    .string({ error: "android_url must be a string" })
    .max(2048, "android_url must be at most 2048 characters")
    .refine(isHttpUrl, "android_url must be an http:// or https:// URL without a user, password, query or fragment")
    .optional(),
  android_user: secretLike("android_user", /^[^\s:\p{Cc}]+$/u, "may not be empty nor hold spaces, ':' or control characters"),
  android_password: secretLike("android_password", /^[^\p{Cc}]+$/u, "may not be empty nor hold control characters"),
  android_device: secretLike("android_device", /^[A-Za-z0-9_-]+$/, "may not be empty and may hold letters, digits, '-' and '_' only"),
  android_signing_key: secretLike("android_signing_key", /^[^\p{Cc}]+$/u, "may not be empty nor hold control characters"),
};

export type PhoneInput = { [K in keyof typeof phoneFields]?: z.infer<(typeof phoneFields)[K]> };

/** Stores the change, refusing one that would leave a location on "android" without its phone's address, login or device. */
export async function setPhoneConfig(phones: PhoneStore, locationId: string, input: PhoneInput, now: number): Promise<boolean> {
  const change: PhoneChange = {
    gateway: input.gateway,
    url: input.android_url?.replace(/\/+$/, ""),
    user: input.android_user,
    password: input.android_password,
    deviceId: input.android_device,
    signingKey: input.android_signing_key,
  };
  const defined = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined)) as PhoneChange;
  if (Object.keys(defined).length === 0) return true;
  const stored = (await phones.describe(locationId)) ?? { gateway: "cast", url: "", user: "", deviceId: "", passwordSet: false };
  const after = { ...stored, ...defined };
  if (after.gateway === "android") {
    const missing = [
      !after.url && "--android-url",
      !after.user && "--android-user",
      !(defined.password ?? (after.passwordSet ? "set" : "")) && "--android-password",
      !after.deviceId && "--android-device",
    ].filter(Boolean);
    if (missing.length > 0) throw new AppError("BAD_CONFIG", `gateway android needs the phone's ${missing.join(", ")} (android_url, android_user, android_password, android_device)`);
  }
  return await phones.set(locationId, defined, now);
}

function secretLike(name: string, pattern: RegExp, says: string) {
  return z.string({ error: `${name} must be a string` }).max(256, `${name} must be at most 256 characters`).regex(pattern, `${name} ${says}`).optional();
}

function isHttpUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && !url.username && !url.password && !url.search && !url.hash;
}
