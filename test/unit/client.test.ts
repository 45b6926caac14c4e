import { expect, test } from "vitest";
import { addressGroup, addressShares, clientAddress, proxyPeers, trustedPeers } from "../../src/server/client.ts";

const loopback = trustedPeers(["127.0.0.1", "::1"]);

test.each<{ peer: string | undefined; xff: string | null; trust: boolean; client: string }>([
  { peer: "203.0.113.9", xff: null, trust: false, client: "203.0.113.9" },
  { peer: "127.0.0.1", xff: "198.51.100.2", trust: false, client: "127.0.0.1" }, // TRUST_PROXY off: anyone could send it
  { peer: "::1", xff: "198.51.100.2", trust: true, client: "198.51.100.2" },
  { peer: "127.0.0.1", xff: "forged, 198.51.100.2", trust: true, client: "198.51.100.2" }, // the entry the proxy added
  { peer: "::ffff:127.0.0.1", xff: "198.51.100.2", trust: true, client: "198.51.100.2" }, // a dual-stack socket's IPv4 peer
  { peer: "::ffff:203.0.113.9", xff: null, trust: false, client: "203.0.113.9" },
  { peer: "127.0.0.1", xff: "::ffff:198.51.100.2", trust: true, client: "198.51.100.2" },
  { peer: "127.0.0.1", xff: "2001:db8::7", trust: true, client: "2001:db8::7" },
  { peer: "203.0.113.9", xff: "198.51.100.2", trust: true, client: "203.0.113.9" }, // not a trusted proxy
  { peer: "127.0.0.2", xff: "198.51.100.2", trust: true, client: "127.0.0.2" },
  { peer: "::ffff:127.0.0.2", xff: "198.51.100.2", trust: true, client: "127.0.0.2" },
  { peer: "127.0.0.1", xff: " , ", trust: true, client: "127.0.0.1" }, // no address: the peer
  { peer: "127.0.0.1", xff: "198.51.100.2:5678", trust: true, client: "127.0.0.1" },
  { peer: "127.0.0.1", xff: "unknown", trust: true, client: "127.0.0.1" },
  { peer: "127.0.0.1", xff: "x".repeat(10_000), trust: true, client: "127.0.0.1" },
  { peer: "127.0.0.1", xff: "198.51.100.2, <script>", trust: true, client: "127.0.0.1" }, // never written to the log
  { peer: undefined, xff: "198.51.100.2", trust: true, client: "unknown" },
])("clientAddress($peer, $xff, trusted loopback: $trust) = $client", ({ peer, xff, trust, client }) => {
  expect(clientAddress(peer, xff, trust ? loopback : undefined)).toBe(client);
});

test.each<[string[], string, boolean]>([
  [["127.0.0.1", "::1"], "127.0.0.1", true],
  [["127.0.0.1", "::1"], "::1", true],
  [["127.0.0.1", "::1"], "::ffff:127.0.0.1", true],
  [["127.0.0.1", "::1"], "127.0.0.2", false],
  [["10.0.0.0/8"], "10.200.3.4", true],
  [["10.0.0.0/8"], "::ffff:10.200.3.4", true],
  [["10.0.0.0/8"], "11.0.0.1", false],
  [["2001:db8::/32"], "2001:db8:1::5", true],
  [["2001:db8::/32"], "2001:db9::5", false],
  [["::ffff:192.0.2.1"], "192.0.2.1", true],
  [[], "127.0.0.1", false],
  [["127.0.0.1"], "unknown", false],
])("trustedPeers(%j) trusts %s: %s", (entries, address, trusted) => {
  expect(trustedPeers(entries)(address)).toBe(trusted);
});

test.each<[string, string]>([
  ["203.0.113.9", "203.0.113.9"],
  ["unknown", "unknown"],
  ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
  ["2001:db8:1:2:ffff::9", "2001:db8:1:2::/64"], // another address of the same /64
  ["2001:0db8:0001:0002::1", "2001:db8:1:2::/64"], // leading zeros written out
  ["2001:db8:1:3::1", "2001:db8:1:3::/64"], // the next /64: another client
  ["2001:db8::1", "2001:db8:0:0::/64"],
  ["::1", "0:0:0:0::/64"],
  ["fe80::1%eth0", "fe80:0:0:0::/64"],
  ["64:ff9b::192.0.2.1", "64:ff9b:0:0::/64"],
  ["1:2:3:4:5:6:192.0.2.1", "1:2:3:4::/64"],
])("addressGroup(%s) = %s", (address, group) => {
  expect(addressGroup(address)).toBe(group);
});

test.each<[string, string[]]>([
  ["203.0.113.9", ["203.0.113.9"]],
  ["2001:db8:1:2:3:4:5:6", ["2001:db8:1:2::/64", "2001:db8:1::/48"]],
  ["2001:db8:1:ffff::1", ["2001:db8:1:ffff::/64", "2001:db8:1::/48"]], // another /64 of the same /48
  ["2001:db8::1", ["2001:db8:0:0::/64", "2001:db8:0::/48"]],
])("addressShares(%s) = %j", (address, shares) => {
  expect(addressShares(address)).toEqual(shares);
});

test.each<[string[], string | undefined, boolean]>([
  [[], "127.0.0.1", true],
  [[], "127.0.0.2", true],
  [[], "::1", true],
  [[], "::ffff:127.0.0.1", true],
  [[], "203.0.113.9", false],
  [["10.0.0.0/8"], "10.1.2.3", true],
  [[], undefined, false],
])("proxyPeers(%j) takes %s for a proxy: %s", (entries, peer, proxy) => {
  expect(proxyPeers({ trustedProxies: entries })(peer)).toBe(proxy);
});
