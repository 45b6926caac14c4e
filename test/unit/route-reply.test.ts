import { describe, expect, test } from "vitest";
import { routeReply, type RouteLookups } from "../../src/core/inbound/route.ts";

/**
 * loc-1 and loc-2 installed; device-solo serves loc-1, device-shared and device-idle both;
 * loc-2 last sent to +639171234567 (as 0917…), through device-shared.
 */
const look: RouteLookups = {
  installed: async (id) => id === "loc-1" || id === "loc-2",
  locationsOfDevice: async (id) => ({ "device-solo": ["loc-1"], "device-shared": ["loc-1", "loc-2"], "device-idle": ["loc-1", "loc-2"] })[id] ?? [],
  lastSentTo: async (e164, local, device) =>
    e164 === "+639171234567" && local === "09171234567" && (device === undefined || device === "device-shared") ? "loc-2" : undefined,
};

describe("routeReply: the location a reply is for", () => {
  test.each([
    ["the location its source names", { locationId: "loc-1", deviceId: "device-shared" }, { locationId: "loc-1", routedBy: "given" }],
    ["the one location its phone serves", { deviceId: "device-solo" }, { locationId: "loc-1", routedBy: "device" }],
    ["a phone serving several: the last sender to that number through it", { deviceId: "device-shared" }, { locationId: "loc-2", routedBy: "last_sent" }],
    ["a phone serving several, none of which sent to that number through it: unrouted", { deviceId: "device-idle" }, { locationId: "", routedBy: "" }],
    ["no phone: the last sender to that number", {}, { locationId: "loc-2", routedBy: "last_sent" }],
    ["none of these: unrouted", { phone: "+639180000000" }, { locationId: "", routedBy: "" }],
  ])("%s", async (_, fields, expected) => {
    expect(await routeReply({ phone: "+639171234567", ...fields }, look)).toEqual(expected);
  });

  test("a named location that is not installed is refused (400), not routed elsewhere", async () => {
    await expect(routeReply({ phone: "+639171234567", locationId: "loc-9" }, look)).rejects.toThrow(/location_id loc-9 is not a location where the app is installed/);
  });
});
