/**
 * What a HighLevel id (locationId, messageId, companyId, contactId) may look like.
 * HighLevel's own are 20-24 letters and digits; the rule leaves room, and keeps out
 * anything that could steer a URL path (`..`, `/`) or forge a log line (CR, LF).
 */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Completes "<name> …" when a value breaks the rule. */
export const ID_RULE = "must be 1-64 letters, digits, '_' or '-'";

export function isId(value: string): boolean {
  return ID_PATTERN.test(value);
}

/**
 * Prefix of a test SMS's messageId (the settings page's): no HighLevel message stands behind
 * it, so its outcome is recorded and never reported. HighLevel's own ids are alphanumeric.
 */
export const TEST_MESSAGE_PREFIX = "bridge-test-";
