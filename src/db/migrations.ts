// long: the numbered migrations are one list, applied in order; cut, its history would be read across files.
import { BILLED_PARTS_SQL, COUNTED_AS_SQL, GATEWAY_SQL, OUTCOME_COLUMNS } from "./usage-count.ts";

/**
 * Numbered schema migrations: entry N takes the schema from version N to N+1.
 * Never edit a shipped entry; append a new one. Times are milliseconds since the epoch.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE tokens (
    location_id TEXT PRIMARY KEY CHECK (location_id <> ''),
    company_id TEXT NOT NULL DEFAULT '',
    access_token TEXT NOT NULL,
    refresh_token TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    installed_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    sender_id TEXT NOT NULL DEFAULT '',
    sms_api_key TEXT NOT NULL DEFAULT '',
    -- bumped on every token write: a refresh lease is taken against it
    token_serial INTEGER NOT NULL DEFAULT 0,
    -- a process refreshing this location's token holds the lease until then
    refresh_lease_until INTEGER NOT NULL DEFAULT 0,
    -- why the last refresh failed for good (the location needs a reinstall)
    refresh_error TEXT NOT NULL DEFAULT ''
  ) STRICT;

  CREATE TABLE jobs (
    id INTEGER PRIMARY KEY,
    message_id TEXT NOT NULL UNIQUE,
    location_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    -- queued -> sending -> reporting -> done; dead when the report is given up
    state TEXT NOT NULL DEFAULT 'queued'
      CHECK (state IN ('queued', 'sending', 'reporting', 'done', 'dead')),
    outcome TEXT CHECK (outcome IN ('delivered', 'failed')),
    error_code TEXT,
    error_message TEXT,
    gateway_message_id TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) STRICT;

  CREATE INDEX jobs_due ON jobs (next_attempt_at) WHERE state IN ('queued', 'reporting');
  `,
  `
  -- A location may use the operator's global SMS_API_KEY / SMS_SENDER_ID only once
  -- approved; the ones installed before this rule existed were trusted, so they are.
  ALTER TABLE tokens ADD COLUMN approved INTEGER NOT NULL DEFAULT 0 CHECK (approved IN (0, 1));
  UPDATE tokens SET approved = 1;
  -- When HighLevel confirmed the app was uninstalled from the location; 0 while installed.
  -- The record (and its settings) stays: a reinstall clears the mark.
  ALTER TABLE tokens ADD COLUMN uninstalled_at INTEGER NOT NULL DEFAULT 0;

  -- Every messageId ever accepted, kept after its job is pruned: a replayed webhook,
  -- however old, is never sent again. Only the id, so it stays small.
  CREATE TABLE seen_messages (message_id TEXT PRIMARY KEY) STRICT, WITHOUT ROWID;
  INSERT INTO seen_messages (message_id) SELECT message_id FROM jobs;
  `,
  `
  -- Exactly once on Cast.ph: every attempt at a job's send carries the same
  -- X-Idempotency-Key, fixed before the first one, so any retry (a timeout, a 5xx, a
  -- crash mid-send) is answered from Cast's cache instead of sending again.
  ALTER TABLE jobs ADD COLUMN idempotency_key TEXT;
  -- When the first attempt went out: Cast remembers a key for 24 h.
  ALTER TABLE jobs ADD COLUMN first_sent_at INTEGER;
  -- Which API key the attempts used (a hash, never the key): keys are scoped to it.
  ALTER TABLE jobs ADD COLUMN api_key_tag TEXT;
  `,
  `
  -- Cast's acceptance is not delivery: until this time bridge asks for the carrier's
  -- receipt before it reports; NULL when no receipt is awaited.
  ALTER TABLE jobs ADD COLUMN receipt_deadline INTEGER;
  -- The carrier's final word (DELIVRD, REJECTD, UNDELIV, EXPIRED, …), or 'none' when
  -- none came within DLR_WAIT.
  ALTER TABLE jobs ADD COLUMN receipt TEXT;
  `,
  `
  -- The queue is read in turns between locations: each location's due sends and due
  -- reports in order (a report never waits behind the location's backlog of sends).
  CREATE INDEX jobs_due_by_location ON jobs (location_id, state, next_attempt_at, id) WHERE state IN ('queued', 'reporting');
  `,
  `
  -- The message log (docs/cli.md, "The message log"): what each message went out with and what became
  -- of it. The happy path fills columns; errors, holds and an operator's retry are
  -- events of their own, each with its time.
  ALTER TABLE jobs ADD COLUMN gateway TEXT NOT NULL DEFAULT 'cast';
  ALTER TABLE jobs ADD COLUMN sender_id TEXT;
  ALTER TABLE jobs ADD COLUMN parts INTEGER;
  -- When the gateway accepted the message, and when its final receipt (or its absence) settled it.
  ALTER TABLE jobs ADD COLUMN sent_at INTEGER;
  ALTER TABLE jobs ADD COLUMN receipt_at INTEGER;
  -- What HighLevel was told, and when.
  ALTER TABLE jobs ADD COLUMN reported_status TEXT;
  ALTER TABLE jobs ADD COLUMN reported_at INTEGER;
  -- Queued again because the gateway refused the API key (401, 402, 403): held, not failed.
  ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1));
  -- An attempt got no clear answer, so the SMS may have left: an operator may not retry it.
  -- Jobs from before this log kept no record of their attempts: any attempt counts.
  ALTER TABLE jobs ADD COLUMN unclear INTEGER NOT NULL DEFAULT 0 CHECK (unclear IN (0, 1));
  UPDATE jobs SET unclear = 1 WHERE first_sent_at IS NOT NULL;
  -- When an operator queued a failed message again (its hold time counts from then).
  ALTER TABLE jobs ADD COLUMN requeued_at INTEGER;

  CREATE TABLE job_events (
    id INTEGER PRIMARY KEY,
    job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
  ) STRICT;
  CREATE INDEX job_events_by_job ON job_events (job_id, id);

  -- Newest first, for all locations or one.
  CREATE INDEX jobs_by_time ON jobs (created_at);
  CREATE INDEX jobs_by_location_time ON jobs (location_id, created_at);

  -- Gateway API keys as the operator's view knows them, by a hash of the key (never the
  -- key): whether the gateway holds it, and its last known balance.
  CREATE TABLE gateway_keys (
    key_tag TEXT PRIMARY KEY,
    key_masked TEXT NOT NULL,
    held_since INTEGER,
    held_status INTEGER,
    held_reason TEXT,
    balance REAL,
    balance_at INTEGER,
    balance_error TEXT
  ) STRICT;
  `,
  `
  -- An agency (company) install's own token, kept after the install: it fetches the
  -- token of each location the agency adds later (INSTALL webhooks, reconciliation).
  -- Refreshed like a location's, with the same lease between processes.
  CREATE TABLE companies (
    company_id TEXT PRIMARY KEY CHECK (company_id <> ''),
    access_token TEXT NOT NULL,
    refresh_token TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    installed_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    token_serial INTEGER NOT NULL DEFAULT 0,
    refresh_lease_until INTEGER NOT NULL DEFAULT 0,
    refresh_error TEXT NOT NULL DEFAULT ''
  ) STRICT;
  -- The location's name in HighLevel, when known (from /oauth/installedLocations).
  ALTER TABLE tokens ADD COLUMN location_name TEXT NOT NULL DEFAULT '';
  `,
  `
  -- Where a location's approval came from: 'operator' (bridge locations approve),
  -- 'allowlist' (an install of a company in ALLOWED_COMPANY_IDS), 'withdrawn' (bridge
  -- locations unapprove: reinstalls and sync keep it), '' (never approved). The approvals
  -- stored before this are 'unconfirmed': schema 2 approved every location it found,
  -- strangers' installs included, and nothing since tells those from an operator's.
  ALTER TABLE tokens ADD COLUMN approved_by TEXT NOT NULL DEFAULT ''
    CHECK (approved_by IN ('', 'operator', 'allowlist', 'unconfirmed', 'withdrawn'));
  UPDATE tokens SET approved_by = 'unconfirmed' WHERE approved = 1;
  `,
  `
  -- The API key itself (sealed, like a location's), kept while a message sent with it
  -- waits for its receipt: Cast tells of a message only to the key that sent it, and the
  -- location's key or SMS_API_KEY may change meanwhile. '' once no unsettled job uses it.
  ALTER TABLE gateway_keys ADD COLUMN api_key TEXT NOT NULL DEFAULT '';
  `,
  `
  -- Each location's opt-out list: numbers (E.164) that asked for no more texts from it.
  -- A send to one is failed without a gateway call. Who put it there: a stop-word reply
  -- or an operator; a START reply or an operator takes it off (the row is deleted).
  CREATE TABLE opt_outs (
    location_id TEXT NOT NULL CHECK (location_id <> ''),
    phone TEXT NOT NULL CHECK (phone <> ''),
    opted_out_by TEXT NOT NULL CHECK (opted_out_by IN ('reply', 'operator')),
    opted_out_at INTEGER NOT NULL,
    PRIMARY KEY (location_id, phone)
  ) STRICT, WITHOUT ROWID;
  `,
  `
  -- Replies (docs/http.md, "Replies"): each text someone sent to one of bridge's numbers,
  -- committed before its source is answered, then posted to HighLevel once.
  CREATE TABLE inbound (
    id INTEGER PRIMARY KEY,
    -- bridge's id of the reply: HighLevel's altId, the id the operator names
    inbound_id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL CHECK (source IN ('android', 'api')),
    -- a phone's copies of one reply share it (device, sender, receivedAt, text); another
    -- source's, its own id; a reply with neither, its inbound_id
    dedupe_key TEXT NOT NULL UNIQUE,
    phone TEXT NOT NULL,
    text TEXT NOT NULL,
    to_number TEXT NOT NULL DEFAULT '',
    device_id TEXT NOT NULL DEFAULT '',
    -- as the source wrote it, and as ms since the epoch (when bridge took it, if none)
    received_at TEXT NOT NULL DEFAULT '',
    received_ms INTEGER NOT NULL,
    source_id TEXT NOT NULL DEFAULT '',
    -- '' while unrouted
    location_id TEXT NOT NULL DEFAULT '',
    routed_by TEXT NOT NULL DEFAULT ''
      CHECK (routed_by IN ('', 'given', 'device', 'last_sent', 'operator')),
    -- unrouted -> queued -> posting -> done; dead when given up or its fate is unknown
    state TEXT NOT NULL CHECK (state IN ('unrouted', 'queued', 'posting', 'done', 'dead')),
    -- what the reply asks of the sender's opt-out: a stop word, a start word, or nothing
    opt_out TEXT NOT NULL DEFAULT '' CHECK (opt_out IN ('', 'stop', 'start')),
    contact_id TEXT,
    crm_message_id TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX inbound_due ON inbound (next_attempt_at, id) WHERE state = 'queued';
  CREATE INDEX inbound_by_time ON inbound (created_at);
  -- A reply goes to the location that last sent to its phone.
  CREATE INDEX jobs_by_phone ON jobs (json_extract(payload, '$.phone'), created_at);
  `,
  `
  -- Which gateway a location's messages go through: 'cast' (Cast.ph, the default) or
  -- 'android' (a phone running SMS Gateway for Android, which can also receive replies),
  -- with the phone's address, login and device (docs/android.md). The password and the
  -- webhook signing key are sealed like sms_api_key. One phone may serve several locations.
  CREATE TABLE location_gateways (
    location_id TEXT PRIMARY KEY REFERENCES tokens (location_id) ON DELETE CASCADE,
    gateway TEXT NOT NULL DEFAULT 'cast' CHECK (gateway IN ('cast', 'android')),
    android_url TEXT NOT NULL DEFAULT '',
    android_user TEXT NOT NULL DEFAULT '',
    android_password TEXT NOT NULL DEFAULT '',
    android_device TEXT NOT NULL DEFAULT '',
    android_signing_key TEXT NOT NULL DEFAULT '',
    updated_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX location_gateways_by_device ON location_gateways (android_device);
  -- A phone's status webhook names the message by the id it was sent under: the job's key.
  CREATE INDEX jobs_by_idempotency_key ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
  `,
  `
  -- A location admin adds opt-outs on the settings page too: 'page', apart from the
  -- operator's. SQLite changes a CHECK only by building the table again.
  CREATE TABLE opt_outs_new (
    location_id TEXT NOT NULL CHECK (location_id <> ''),
    phone TEXT NOT NULL CHECK (phone <> ''),
    opted_out_by TEXT NOT NULL CHECK (opted_out_by IN ('reply', 'operator', 'page')),
    opted_out_at INTEGER NOT NULL,
    PRIMARY KEY (location_id, phone)
  ) STRICT, WITHOUT ROWID;
  INSERT INTO opt_outs_new (location_id, phone, opted_out_by, opted_out_at)
    SELECT location_id, phone, opted_out_by, opted_out_at FROM opt_outs;
  DROP TABLE opt_outs;
  ALTER TABLE opt_outs_new RENAME TO opt_outs;
  `,
  `
  -- The outages the running serve is living through (HighLevel or Cast.ph unreachable), so
  -- that \`bridge status\`, another process, can name them. Rows of a serve that stopped
  -- are cleared at its next start; \`last_failed_at\` tells how fresh a row is.
  CREATE TABLE outages (
    remote TEXT PRIMARY KEY,
    since INTEGER NOT NULL,
    kind TEXT NOT NULL,
    reason TEXT NOT NULL,
    failed_calls INTEGER NOT NULL,
    last_failed_at INTEGER NOT NULL
  ) STRICT;
  `,
  `
  -- The queue's due reads, one index per state: a location's earliest send and its earliest
  -- report are each one seek, and neither passes the other state's rows on its way (a
  -- backlog of sends once stood before every report look: docs/PERFORMANCE.md). They replace
  -- the two indexes over both states; jobs_due had no reader left.
  CREATE INDEX jobs_sends_due ON jobs (location_id, next_attempt_at, id) WHERE state = 'queued';
  CREATE INDEX jobs_reports_due ON jobs (location_id, next_attempt_at, id) WHERE state = 'reporting';
  DROP INDEX jobs_due_by_location;
  DROP INDEX jobs_due;
  `,
  `
  -- A reply whose post got no clear answer stays 'posting' and is looked up in HighLevel
  -- before it is posted again (docs/http.md, "Replies"): looks counts the lookups that did
  -- not find it since its last post. The queue takes 'posting' replies too, and one
  -- contact's replies in the order they came: the first still waiting goes first.
  ALTER TABLE inbound ADD COLUMN looks INTEGER NOT NULL DEFAULT 0;
  DROP INDEX inbound_due;
  CREATE INDEX inbound_waiting ON inbound (next_attempt_at, id) WHERE state IN ('queued', 'posting');
  CREATE INDEX inbound_waiting_by_contact ON inbound (location_id, phone, id) WHERE state IN ('queued', 'posting');
  -- A message HighLevel holds is the post of one reply only.
  CREATE INDEX inbound_by_crm_message ON inbound (crm_message_id) WHERE crm_message_id IS NOT NULL;
  `,
  `
  -- Usage (docs/usage.md): what each location used, per month (USAGE_TIME_ZONE's) and gateway
  -- ('cast', 'android'; 'api' holds the replies POST /api/inbound took). Counted in the
  -- transaction that settles a message (done, dead) or commits a routed reply; never pruned
  -- with the message log. The failed classes and the refusals add up, with delivered, to messages.
  CREATE TABLE usage (
    location_id TEXT NOT NULL CHECK (location_id <> ''),
    month TEXT NOT NULL CHECK (month GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]'),
    gateway TEXT NOT NULL CHECK (gateway IN ('cast', 'android', 'api')),
    messages INTEGER NOT NULL DEFAULT 0,
    -- SMS parts the gateway took (a message it never sent, or refunded, counts none)
    parts INTEGER NOT NULL DEFAULT 0,
    delivered INTEGER NOT NULL DEFAULT 0,
    failed_invalid INTEGER NOT NULL DEFAULT 0,
    failed_not_sent INTEGER NOT NULL DEFAULT 0,
    failed_rejected INTEGER NOT NULL DEFAULT 0,
    failed_undelivered INTEGER NOT NULL DEFAULT 0,
    failed_unknown INTEGER NOT NULL DEFAULT 0,
    refused_opt_out INTEGER NOT NULL DEFAULT 0,
    refused_cap INTEGER NOT NULL DEFAULT 0,
    replies INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (location_id, month, gateway)
  ) STRICT, WITHOUT ROWID;
  -- A location's monthly limit of SMS parts (bridge config set LOC --monthly-cap PARTS).
  CREATE TABLE usage_caps (
    location_id TEXT PRIMARY KEY REFERENCES tokens (location_id) ON DELETE CASCADE,
    monthly_cap INTEGER NOT NULL CHECK (monthly_cap >= 0),
    updated_at INTEGER NOT NULL
  ) STRICT;
  -- Parts claimed for a send and not yet settled, per location and month: the cap is
  -- checked against usage.parts plus these, in the claim's own transaction.
  CREATE TABLE usage_reserved (
    location_id TEXT NOT NULL,
    month TEXT NOT NULL,
    parts INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (location_id, month)
  ) STRICT, WITHOUT ROWID;
  -- The month a job counts in (of its first claim, else of its refusal), the parts its
  -- claim reserved until it settles, and whether its settling was counted in usage.
  ALTER TABLE jobs ADD COLUMN usage_month TEXT;
  ALTER TABLE jobs ADD COLUMN reserved_parts INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE jobs ADD COLUMN counted INTEGER NOT NULL DEFAULT 0 CHECK (counted IN (0, 1));
  -- The messages settled before usage was kept are counted from the log, in Manila's month
  -- (UTC+8 all year) of their first attempt, else of their creation; the replies routed, in
  -- the month bridge took them. (The counting expressions are usage-count.ts's; a change
  -- there does not run again on a database past this step.)
  UPDATE jobs SET counted = 1,
    usage_month = strftime('%Y-%m', coalesce(first_sent_at, created_at) / 1000 + 28800, 'unixepoch')
    WHERE state IN ('done', 'dead');
  INSERT INTO usage (location_id, month, gateway, messages, parts, ${OUTCOME_COLUMNS.join(", ")})
    SELECT location_id, usage_month, gw, count(*), sum(p), ${OUTCOME_COLUMNS.map((c) => `sum(k = '${c}')`).join(", ")}
    FROM (SELECT location_id, usage_month, ${GATEWAY_SQL} AS gw, ${COUNTED_AS_SQL} AS k, ${BILLED_PARTS_SQL} AS p
      FROM jobs WHERE counted = 1)
    GROUP BY location_id, usage_month, gw;
  INSERT INTO usage (location_id, month, gateway, replies)
    SELECT location_id, strftime('%Y-%m', created_at / 1000 + 28800, 'unixepoch'),
      CASE source WHEN 'android' THEN 'android' ELSE 'api' END AS gw, count(*)
    FROM inbound WHERE location_id <> '' GROUP BY 1, 2, 3
    ON CONFLICT (location_id, month, gateway) DO UPDATE SET replies = replies + excluded.replies;
  `,
  `
  -- Alerts to a person (ALERT_WEBHOOK_URL, docs/alerts.md): each kept until the webhook
  -- took it, so one survives a restart and an outage of the receiver. \`alert_conditions\`
  -- holds the conditions an alert was raised for and not yet cleared: their "ended" is due.
  CREATE TABLE alerts (
    id INTEGER PRIMARY KEY,
    condition TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('started', 'repeat', 'ended', 'test')),
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    delivered_at INTEGER,
    last_error TEXT,
    last_attempt_at INTEGER
  ) STRICT;
  CREATE INDEX alerts_waiting ON alerts (id) WHERE delivered_at IS NULL;
  CREATE TABLE alert_conditions (
    condition TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    repeated_at INTEGER NOT NULL
  ) STRICT;
  `,
  `
  -- Several servers on one database (docs/operations.md). \`servers\`: one row per running
  -- serve, its heartbeat every few seconds; a server whose heartbeat is stale is presumed
  -- dead and its work rescued. \`leases\`: one holder at a time per name (the leader, a
  -- key's receipt reader) until \`until_at\`; \`epoch\` grows at each change of holder, so
  -- a late write of a former holder is told apart. Times in ms; on PostgreSQL the
  -- database's clock, so servers' clocks never compare.
  CREATE TABLE servers (
    id TEXT PRIMARY KEY,
    address TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
  ) STRICT;
  CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until_at INTEGER NOT NULL,
    epoch INTEGER NOT NULL DEFAULT 1
  ) STRICT;
  -- The settings page's sessions: the token's SHA-256 only, so a read of the database
  -- gives no live token; one per user and location.
  CREATE TABLE app_sessions (
    token_hash TEXT PRIMARY KEY,
    location_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    UNIQUE (location_id, user_id)
  ) STRICT;
  -- Each gateway key's send budget, shared by every server: tokens refilled at the key's
  -- rate, and a pause every server honours after the gateway's 429.
  CREATE TABLE key_budgets (
    tag TEXT PRIMARY KEY,
    tokens REAL NOT NULL,
    at_ms REAL NOT NULL,
    paused_until REAL NOT NULL DEFAULT 0
  ) STRICT;
  -- Which server runs the job now (a run lease, whatever its stage): NULL when none does.
  -- A server's writes to a job it runs are conditioned on it, so the write of a server
  -- presumed dead, whose jobs were rescued, changes nothing.
  ALTER TABLE jobs ADD COLUMN run_by TEXT;
  CREATE INDEX jobs_running ON jobs (run_by) WHERE run_by IS NOT NULL;
  `,
  `
  -- Cast's unsubscribed list of each gateway key (by its tag, as key_budgets), read by one
  -- server at a time for every server (docs/operations.md): \`entries\` is the list as JSON
  -- ([{"phone", "senderId"}]), NULL when that read failed; \`read_at\` on the store's clock.
  CREATE TABLE unsubscribed_lists (
    tag TEXT PRIMARY KEY,
    entries TEXT,
    read_at INTEGER NOT NULL
  ) STRICT;
  `,
  `
  -- A phone's sends of the last hour, by its key's tag: the server that starts sending
  -- through the phone (after a restart, or another server's turn) counts its hourly budget
  -- from them. Only the jobs of gateways other than Cast: a Cast send writes no entry.
  CREATE INDEX jobs_sent_through_phones ON jobs (api_key_tag, first_sent_at) WHERE gateway <> 'cast';
  `,
];
