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
];
