// Types of fakes.mjs, for the tests that hold its answers to Cast's documented ones.

export interface FakeServer {
  url: string;
  close(): Promise<void>;
}

export interface FakeGatewayOptions {
  limit?: boolean;
  ratePerSec?: number;
  burst?: number;
  latencyMs?: number;
  perAddress?: boolean;
  address?: { ratePerSec: number; burst: number };
  receiptOf?: (text: string) => { delayMs: number; dlr: string };
  perSource?: { ratePerSec: number; burst: number };
  perKey?: { ratePerSec: number; burst: number };
}

export interface FakeGatewayStats {
  calls: number;
  rateLimited: number;
  duplicates: number;
  replays: number;
  receiptReads: number;
  statusCalls: number;
  logReads: number;
}

export function startFakeGateway(options?: FakeGatewayOptions): Promise<
  FakeServer & {
    accepted: { at: number; message: string; key?: string; source?: string }[];
    acceptedAt: Map<string, number>;
    receiptAt: Map<string, { at: number; dlr: string }>;
    rateLimitedAt: number[];
    readsAt: number[];
    stats: FakeGatewayStats;
    refusedBy: { source: number; key: number };
  }
>;

export function startFakeCrm(): Promise<
  FakeServer & {
    reports: Map<string, { status: unknown; at: number }>;
    inbound: Map<string, { posts: number; at: number }>;
    readonly puts: number;
    countStatus(status: string): number;
  }
>;
