import type Database from "better-sqlite3";

/** The one SQLite connection every store works on; opened by `openDb` (src/db/index.ts). */
export type Db = Database.Database;
