import { describe, expect, test } from "vitest";
import type { OutboundMessage } from "../../src/db/jobs.ts";
import { SCOPES, installUrl } from "../../src/core/installs/install.ts";
import { composeText } from "../../src/core/parts.ts";
import { SPEC_SCOPES } from "../helpers/spec.ts";

const message = (text: string, attachments: string[]): OutboundMessage => ({
  messageId: "m-1",
  locationId: "loc-1",
  contactId: "c-1",
  phone: "+639171234567",
  message: text,
  attachments,
});

describe("composeText", () => {
  test.each<[string, string, string[], string]>([
    ["message only", "hello", [], "hello"],
    ["message and one attachment", "hello", ["https://x.test/a.jpg"], "hello\nhttps://x.test/a.jpg"],
    [
      "message and two attachments, each on its own line",
      "see these",
      ["https://x.test/a.jpg", "https://x.test/b.pdf"],
      "see these\nhttps://x.test/a.jpg\nhttps://x.test/b.pdf",
    ],
    ["empty message with an attachment", "", ["https://x.test/a.jpg"], "https://x.test/a.jpg"],
    ["empty message with two attachments", "", ["https://x.test/a.jpg", "https://x.test/b.pdf"], "https://x.test/a.jpg\nhttps://x.test/b.pdf"],
    ["nothing at all", "", [], ""],
    ["a multi-line message keeps its lines", "line 1\nline 2", ["https://x.test/a.jpg"], "line 1\nline 2\nhttps://x.test/a.jpg"],
  ])("%s", (_, text, attachments, expected) => {
    expect(composeText(message(text, attachments))).toBe(expected);
  });
});

describe("installUrl", () => {
  const clientId = "0123456789abcdef01234567-mhq8v1x2";
  const url = installUrl("https://marketplace.gohighlevel.com", "https://bridge.example.com", clientId);
  const parsed = new URL(url);

  test("goes to the CRM's location chooser", () => {
    expect(`${parsed.origin}${parsed.pathname}`).toBe("https://marketplace.gohighlevel.com/oauth/chooselocation");
  });

  test.each([
    ["response_type", "code"],
    ["redirect_uri", "https://bridge.example.com/oauth-callback"],
    ["client_id", clientId],
    ["scope", SCOPES.join(" ")],
  ])("%s is %s", (name, value) => {
    expect(parsed.searchParams.get(name)).toBe(value);
  });

  test("asks for exactly the spec's scopes", () => {
    expect(parsed.searchParams.get("scope")?.split(" ")).toEqual(SPEC_SCOPES);
  });

  test.each([
    ["redirect_uri", "https%3A%2F%2Fbridge.example.com%2Foauth-callback"],
    ["scope", "conversations%2Fmessage.write%20conversations%2Fmessage.readonly%20"],
  ])("%s is URL-encoded, spaces as %%20", (name, encoded) => {
    expect(url).toContain(`${name}=${encoded}`);
    expect(url).not.toContain("+");
  });
});
