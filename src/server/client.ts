import { BlockList, isIP } from "node:net";
import { getRequestIP, type H3Event } from "h3";
import type { ResolvedConfig } from "../core/config.ts";

/**
 * Names a request's client, what failed logins are counted and logged against: the
 * TCP peer's address; with TRUST_PROXY, when that peer is one of TRUSTED_PROXIES, the
 * address the proxy appended to X-Forwarded-For. From any other peer the header is the
 * client's own word (a fresh one per try would escape the throttle, and naming someone
 * else would lock them out), so it is ignored.
 */
export function createClientAddress(config: Pick<ResolvedConfig, "trustProxy" | "trustedProxies">): (event: H3Event) => string {
  const isTrusted = config.trustProxy ? trustedPeers(config.trustedProxies) : undefined;
  return (event) => clientAddress(getRequestIP(event), event.req.headers.get("x-forwarded-for"), isTrusted);
}

/**
 * The client of a request from `peer`: the last X-Forwarded-For entry (the one the proxy
 * added; those before it came from the client) when `isTrusted(peer)` and that entry is
 * an IP address, the peer otherwise.
 */
export function clientAddress(peer: string | undefined, forwardedFor: string | null, isTrusted?: (address: string) => boolean): string {
  if (!peer) return "unknown";
  const from = unmapped(peer);
  if (!isTrusted || !forwardedFor || !isTrusted(from)) return from;
  const last = forwardedFor.slice(forwardedFor.lastIndexOf(",") + 1).trim();
  return isIP(last) ? unmapped(last) : from;
}

/** A matcher of TRUSTED_PROXIES' entries (addresses and CIDR ranges, checked by loadConfig). */
export function trustedPeers(entries: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = "", prefix] = entry.split("/");
    if (prefix === undefined) list.addAddress(address, family(address));
    else list.addSubnet(address, Number(prefix), family(address));
  }
  return (address) => isIP(address) !== 0 && list.check(address, family(address));
}

function family(address: string): "ipv4" | "ipv6" {
  return isIP(address) === 6 ? "ipv6" : "ipv4";
}

/** `::ffff:127.0.0.1` (an IPv4 client of a dual-stack socket) as `127.0.0.1`: one client, one name. */
function unmapped(address: string): string {
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address) ? address.slice(7) : address;
}

/**
 * The group a client address's share of a limit is counted by: an IPv4 address alone,
 * an IPv6 address by its /64 (one subscriber is routed a whole /64 and may pick any
 * address in it, so counting each address apart would give it 2^64 shares).
 */
export function addressGroup(address: string): string {
  if (isIP(address) !== 6) return address;
  const [head = "", tail] = (address.split("%")[0] ?? "").split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  // A trailing dotted IPv4 part fills two groups; it never reaches the first four here.
  const width = (groups: string[]) => groups.length + (groups.at(-1)?.includes(".") ? 1 : 0);
  const groups = [...left, ...Array<string>(Math.max(0, 8 - width(left) - width(right))).fill("0"), ...right];
  return `${groups.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16)).join(":")}::/64`;
}
