/**
 * Integration files that reach under the store into SQLite itself throughout (openDb, the
 * file, better-sqlite3, PRAGMAs), each with what it reaches for: the PostgreSQL pass
 * (vitest.config.ts, project "postgres") leaves them out. A single such test in a file
 * that otherwise runs on both is marked in place instead: `sqliteOnly(why)` of
 * test-store.ts. What these prove on SQLite, the store's contract cases prove on both
 * (test/contract/store.test.ts).
 */
export const SQLITE_ONLY_FILES: Readonly<Record<string, string>> = {
  "test/integration/encryption.test.ts": "reads and forges the sealed columns in the SQLite file (better-sqlite3, openDb with another Sealer)",
  "test/integration/receipt-key.test.ts": "reads and clears gateway_keys.api_key, the key a receipt waits on, through core.db",
};
