import CryptoJS from "crypto-js";
import { COMPANY_ID } from "./fake-crm.ts";

export const SHARED_SECRET = "shared-secret-do-not-log-0123456789";

/**
 * HighLevel's decrypted user, as its documentation shows it
 * (https://marketplace.gohighlevel.com/docs/other/user-context-marketplace-apps, "Custom Pages"):
 *   { "userId": "MKQJ7wOVVmNOMvrnKKKK", "companyId": "GNb7aIv4rQFVb9iwNl5K", "role": "admin",
 *     "type": "agency", "activeLocation": "yLKVZpNppIdYpah4RjNE", "userName": "John Doe",
 *     "email": "user@example.com", "isAgencyOwner": false }
 * with the location the test installed as activeLocation, and its company (the fake CRM's).
 */
export function highLevelUser(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    userId: "MKQJ7wOVVmNOMvrnKKKK",
    companyId: COMPANY_ID,
    role: "admin",
    type: "agency",
    activeLocation: "loc-1",
    userName: "John Doe",
    email: "user@example.com",
    isAgencyOwner: false,
    ...fields,
  };
}

/** What HighLevel's parent frame hands the page: the user encrypted as CryptoJS does with a passphrase. */
export function encryptUser(user: Record<string, unknown>, secret = SHARED_SECRET): string {
  return CryptoJS.AES.encrypt(JSON.stringify(user), secret).toString();
}
