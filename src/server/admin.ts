import { getRouterParam, type H3, type H3Event } from "h3";
import { setLocationConfig } from "../core/location-config.ts";
import { ID_RULE, isId } from "../core/ids.ts";
import { approveLocation, getLocationConfig, listLocations } from "../core/locations.ts";
import { httpError, type AppDeps } from "./app.ts";
import { createAdminAuth } from "./auth.ts";
import { parseJson, readLimitedBody } from "./body.ts";

/** The admin API (spec 4.1, CONTRACT.md 3), all behind the INBOUND_API_KEY bearer. */
export function adminRoutes(app: H3, { core }: AppDeps): void {
  const auth = createAdminAuth(core);

  app.get("/api/admin/locations", (event) => {
    auth(event);
    return { locations: listLocations(core.tokens) };
  });

  app.get("/api/admin/locations/:locationId/config", (event) => {
    auth(event);
    return getLocationConfig(core.tokens, locationParam(event));
  });

  app.put("/api/admin/locations/:locationId/config", async (event) => {
    auth(event);
    const body = parseJson(await readLimitedBody(event));
    return setLocationConfig(core.tokens, locationParam(event), body, core.now());
  });

  app.post("/api/admin/locations/:locationId/approve", (event) => {
    auth(event);
    return approveLocation(core.tokens, locationParam(event), core.now());
  });
}

function locationParam(event: H3Event): string {
  const raw = getRouterParam(event, "locationId") ?? "";
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw httpError(400, "malformed location id in the path");
  }
  if (!isId(id)) throw httpError(400, `invalid location id: it ${ID_RULE}`);
  return id;
}
