import CryptoJS from "crypto-js";
import { describe, expect, it } from "vitest";
import { decryptPayload, parseUser } from "../../src/core/app/payload.ts";
import { encryptUser, highLevelUser, SHARED_SECRET } from "../helpers/app-payload.ts";

describe("decryptPayload: CryptoJS's passphrase format with node:crypto", () => {
  it.each([["short text", "{}"], ["unicode", JSON.stringify({ userName: "Ñiño 東京 🙂" })], ["many blocks", "x".repeat(1000)]])(
    "opens what CryptoJS.AES.encrypt(%s, secret) made",
    (_, text) => {
      expect(decryptPayload(CryptoJS.AES.encrypt(text, SHARED_SECRET).toString(), SHARED_SECRET)).toBe(text);
    },
  );

  it.each([
    ["a wrong secret", encryptUser(highLevelUser(), "another-secret")],
    ["unencrypted JSON", JSON.stringify(highLevelUser())],
    ["base64 without Salted__", Buffer.from("x".repeat(48)).toString("base64")],
    ["a truncated payload", encryptUser(highLevelUser()).slice(0, 40)],
    ["an empty string", ""],
  ])("refuses %s", (_, payload) => {
    expect(decryptPayload(payload, SHARED_SECRET)).toBeUndefined();
  });
});

describe("parseUser", () => {
  it("reads HighLevel's documented fields", () => {
    expect(parseUser(JSON.stringify(highLevelUser({ companyId: "GNb7aIv4rQFVb9iwNl5K" })))).toEqual({
      userId: "MKQJ7wOVVmNOMvrnKKKK",
      companyId: "GNb7aIv4rQFVb9iwNl5K",
      role: "admin",
      type: "agency",
      activeLocation: "loc-1",
      userName: "John Doe",
      email: "user@example.com",
    });
  });

  it.each([
    ["not JSON", "{nope", "not JSON"],
    ["an array", "[]", "not a JSON object"],
    ["no activeLocation (the agency level)", JSON.stringify(highLevelUser({ activeLocation: undefined })), "no activeLocation"],
    ["no userId", JSON.stringify(highLevelUser({ userId: "" })), "no userId"],
    ["a non-string role", JSON.stringify(highLevelUser({ role: 1 })), "role is not a string"],
  ])("refuses %s", (_, json, reason) => {
    expect(parseUser(json)).toContain(reason);
  });
});
