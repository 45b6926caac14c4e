import type { Command } from "commander";
import { errorMessage } from "../errors.ts";
import type { GlobalOptions } from "./context.ts";
import type { Core } from "../core/index.ts";
import { json, locationArg, table, UsageError, type Io } from "./io.ts";

interface RefreshLine {
  location_id: string;
  status: "refreshed" | "still valid" | "failed";
  expires_at: string;
  error?: string;
}

/**
 * `bridge token refresh <locationId>|--all [--force]`: the server's own refresh path,
 * so a refresh here and one in a running server never spend the same refresh token.
 */
export function tokenCommand(program: Command, io: Io, globals: () => GlobalOptions): void {
  const token = program.command("token").description("CRM access tokens");
  token
    .command("refresh [locationId]")
    .description("refresh access tokens that expire within 5 minutes (--force: refresh anyway)")
    .option("--all", "every installed location")
    .option("--force", "refresh even if the token is still valid, or was refused before (needs reinstall)")
    .option("--json", "machine-readable output")
    .action(async (locationId: string | undefined, options: { all?: boolean; force?: boolean; json?: boolean }) => {
      if (locationId && options.all) throw new UsageError(`name one location or use --all, not both (got ${locationId} and --all)`);
      if (!locationId && !options.all) throw new UsageError("name one location, or use --all");
      if (locationId) locationArg(locationId);
      const { withCore } = await import("./context.ts");
      const outcomes = await withCore(io, globals(), "token", async (core) => {
        // The listing opens no token: one location's that the key does not open fails alone.
        const ids = locationId ? [locationId] : (await core.tokens.listings()).map((t) => t.locationId);
        const results: RefreshLine[] = [];
        for (const id of ids) results.push(await refreshOne(core, id, options.force ?? false));
        return results;
      });
      if (options.json) io.out(json({ results: outcomes }));
      else if (outcomes.length === 0) io.out("no locations installed\n");
      else io.out(table(["LOCATION", "STATUS", "EXPIRES", "ERROR"], outcomes.map((o) => [o.location_id, o.status, o.expires_at, o.error ?? ""])));
      const failures = outcomes.filter((o) => o.status === "failed").length;
      if (failures > 0) throw new Error(`${failures} refresh(es) failed`);
    });
}

async function refreshOne(core: Core, locationId: string, force: boolean): Promise<RefreshLine> {
  let before: Awaited<ReturnType<Core["tokens"]["get"]>>;
  try {
    before = await core.tokens.get(locationId);
    const after = await core.installs.tokenService.refresh(locationId, force);
    const status = after.accessToken !== before?.accessToken ? "refreshed" : "still valid";
    return { location_id: locationId, status, expires_at: new Date(after.expiresAt).toISOString() };
  } catch (error) {
    const expires = before ? new Date(before.expiresAt).toISOString() : "";
    return { location_id: locationId, status: "failed", expires_at: expires, error: errorMessage(error) };
  }
}
