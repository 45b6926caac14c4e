import { createGroupCommit, type Commit } from "../db/commit.ts";
import type { Db } from "../db/index.ts";
import { createJobStore, type Job, type JobStore } from "../db/jobs.ts";
import { resealV1 } from "../db/reseal.ts";
import { createTokenStore, type TokenStore } from "../db/tokens.ts";
import { createCastClient, type GatewayOptions, type SmsGateway } from "./clients/cast.ts";
import { createCrmClient, type CrmClient, type CrmOptions } from "./clients/crm.ts";
import type { ResolvedConfig } from "./config.ts";
import type { Logger } from "./log.ts";
import { processOutbound, type OutboundDeps } from "./outbound.ts";
import { createPacer } from "./pacer.ts";
import { createSealer } from "./sealer.ts";
import { createTokenService, type TokenService } from "./tokens.ts";

/** Everything the server and the CLI share, built once from config and a database. */
export interface Core {
  config: ResolvedConfig;
  db: Db;
  tokens: TokenStore;
  jobs: JobStore;
  /** Group commit for the job table's writes: the webhooks' and the queue worker's. */
  commit: Commit;
  crm: CrmClient;
  sms: SmsGateway;
  tokenService: TokenService;
  log: Logger;
  now: () => number;
  /** processOutbound with its dependencies bound. */
  processOutbound: (job: Job) => Promise<void>;
  /** Gap between the CRM calls of a bulk install. */
  bulkPaceMs: number;
}

/** Knobs tests turn to make waits short; production uses the defaults. */
export interface Tuning {
  crm?: Partial<Pick<CrmOptions, "timeoutMs" | "retryDelayMs">>;
  sms?: Partial<Pick<GatewayOptions, "timeoutMs" | "retries" | "retryDelayMs">>;
  pace?: { perSecond: number; burst: number };
  reportBackoffMs?: number;
  reportAttempts?: number;
  bulkPaceMs?: number;
  /** How long a write waits for others to share its commit. */
  commitWindowMs?: number;
  /** First wait before storing a refreshed token pair again. */
  tokenStoreRetryMs?: number;
  /** First wait before storing a send's result again. */
  resultStoreRetryMs?: number;
}

export function createCore(config: ResolvedConfig, db: Db, log: Logger, now: () => number = Date.now, tuning: Tuning = {}): Core {
  const sealer = createSealer(config.encryptionKey);
  const tokens = createTokenStore(db, sealer);
  tokens.checkKey();
  const resealed = config.encryptionKey ? resealV1(db, sealer) : 0;
  if (resealed > 0) log.info(`secrets of ${resealed} location(s) sealed again, now bound to their row and column`);
  const jobs = createJobStore(db);
  const commit = createGroupCommit(db, tuning.commitWindowMs);
  const crm = createCrmClient({
    apiUrl: config.crm.apiUrl,
    clientId: config.crm.clientId,
    clientSecret: config.crm.clientSecret,
    redirectUri: `${config.baseUrl}/oauth-callback`,
    appId: config.crm.appId,
    ...tuning.crm,
  });
  const sms = createCastClient({ apiUrl: config.sms.apiUrl, ...tuning.sms });
  // Cast.ph allows 30 requests/s with a burst of 50 per key; stay a little under.
  const pacer = createPacer({ perSecond: 29.5, burst: 48, ...tuning.pace });
  const tokenService = createTokenService({ tokens, crm, now, log, storeRetryMs: tuning.tokenStoreRetryMs });
  const deps: OutboundDeps = {
    tokens,
    jobs,
    commit,
    tokenService,
    sms,
    pacer,
    crm,
    defaults: { apiKey: config.sms.apiKey, senderId: config.sms.senderId },
    now,
    log,
    reportBackoffMs: tuning.reportBackoffMs,
    reportAttempts: tuning.reportAttempts,
    storeRetryMs: tuning.resultStoreRetryMs,
  };
  return {
    config,
    db,
    tokens,
    jobs,
    commit,
    crm,
    sms,
    tokenService,
    log,
    now,
    processOutbound: (job) => processOutbound(deps, job),
    bulkPaceMs: tuning.bulkPaceMs ?? 110,
  };
}
