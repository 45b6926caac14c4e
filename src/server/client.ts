import { BlockList, isIP } from "node:net";
import { getRequestIP, type H3Event } from "h3";
import type { ResolvedConfig } from "../core/config.ts";
import type { Logger } from "../core/log.ts";

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
 * Warns, once, at the first request that came through a proxy while TRUST_PROXY is
 * off: a proxy peer (loopback or TRUSTED_PROXIES) that sends X-Forwarded-For. Every
 * client then has the proxy's address: failed admin logins count against all of them
 * together, and OAuth installs share the whole gate, not a place each.
 */
export function createProxyWarning(config: Pick<ResolvedConfig, "trustProxy" | "trustedProxies">, log: Logger): (event: H3Event) => void {
  const isProxy = proxyPeers(config);
  let warned = config.trustProxy;
  return (event) => {
    if (warned || !event.req.headers.has("x-forwarded-for") || !isProxy(getRequestIP(event))) return;
    warned = true;
    log.warn(
      `a request from ${getRequestIP(event)} came through a reverse proxy (it sent X-Forwarded-For), but TRUST_PROXY is off: every client has the proxy's address; set TRUST_PROXY=1 (and TRUSTED_PROXIES if the proxy is on another host) so that clients are told apart`,
    );
  };
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
  return isIP(address) === 6 ? ipv6Prefix(address, 4) : address;
}

/**
 * The keys of a client's shares of a limit, narrowest first: an IPv4 address alone; an
 * IPv6 address's /64, then its /48 (a site may be routed a whole /48, 65536 /64s: a
 * share per /64 alone would let it fill any limit).
 */
export function addressShares(address: string): string[] {
  return isIP(address) === 6 ? [ipv6Prefix(address, 4), ipv6Prefix(address, 3)] : [address];
}

/**
 * The peers that are proxies if anything is: loopback (a proxy on this host) and
 * TRUSTED_PROXIES. Their requests, with TRUST_PROXY off, stand for whoever is behind them.
 */
export function proxyPeers(config: Pick<ResolvedConfig, "trustedProxies">): (peer: string | undefined) => boolean {
  const listed = trustedPeers(config.trustedProxies);
  const loopback = trustedPeers(["127.0.0.0/8", "::1"]);
  return (peer) => peer !== undefined && (loopback(unmapped(peer)) || listed(unmapped(peer)));
}

/** The first `groups` 16-bit groups of an IPv6 address, written as a prefix (`2001:db8:1:2::/64`). */
function ipv6Prefix(address: string, groups: number): string {
  const [head = "", tail] = (address.split("%")[0] ?? "").split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  // A trailing dotted IPv4 part fills two groups; it never reaches the first four here.
  const width = (part: string[]) => part.length + (part.at(-1)?.includes(".") ? 1 : 0);
  const all = [...left, ...Array<string>(Math.max(0, 8 - width(left) - width(right))).fill("0"), ...right];
  return `${all.slice(0, groups).map((g) => Number.parseInt(g, 16).toString(16)).join(":")}::/${groups * 16}`;
}
