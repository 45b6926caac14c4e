import pkg from "../../package.json" with { type: "json" };
import { SCHEMA_VERSION } from "../db/schema.ts";

/** The commit dist/bridge was built from (build.mjs defines it); undefined when run from source. */
declare const BRIDGE_COMMIT: string | undefined;

/** The commit this bridge was built from: a short hash ("-dirty" for uncommitted changes), or "source". */
export function buildCommit(): string {
  return typeof BRIDGE_COMMIT === "string" ? BRIDGE_COMMIT : "source";
}

/**
 * What `bridge --version` prints: the release, the commit it was built from and the schema
 * it works with, so an operator can tell two builds apart and knows what `migrate` brings.
 */
export function versionText(): string {
  return `bridge ${pkg.version} (commit ${buildCommit()}, schema ${SCHEMA_VERSION})`;
}
