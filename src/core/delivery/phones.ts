import type { PhoneStore } from "../../store/contract.ts";
import { phoneKey } from "../phone-key.ts";

/**
 * The key a location's messages go with when it sends through a phone (`android:<device
 * id>`, phone-key.ts), which the gateway registry gives to the phones' driver
 * (clients/android-driver.ts); undefined: through Cast, with the location's API key.
 */
export function createPhoneFor(phones: Pick<PhoneStore, "describe">): (locationId: string) => Promise<string | undefined> {
  return async (locationId) => {
    // Read at every send, so a change applies at once; its secrets are not opened for it.
    const settings = await phones.describe(locationId);
    return settings?.gateway === "android" && settings.deviceId ? phoneKey(settings.deviceId) : undefined;
  };
}
