import { errorMessage } from "../../errors.ts";
import type { ServerStore } from "../../store/contract.ts";
import type { Logger } from "../log.ts";
import { ALIVE_MS } from "../servers.ts";

/** The leader looks for servers presumed dead this often. */
const RESCUE_EVERY_MS = 10_000;

export interface RescuerOptions {
  servers: ServerStore;
  log: Logger;
  /** Whether this server leads now (src/core/servers.ts): only the leader rescues. */
  leads: () => boolean;
  /**
   * Takes over the work of the servers presumed dead, by id. The seam of the rescuer of
   * their in-flight sends; until it exists, `forgetServers` only removes their rows.
   */
  rescue?: (deadIds: string[]) => Promise<void>;
  everyMs?: number;
  staleMs?: number;
}

/** After their sends are rescued: the rows of the servers presumed dead removed, each logged. */
export function forgetServers(servers: Pick<ServerStore, "gone">, log: Logger) {
  return async (deadIds: string[]): Promise<void> => {
    for (const id of deadIds) {
      log.warn(`servers: server ${id} sent no heartbeat for over ${ALIVE_MS / 1000} s, or has none and left sends mid-way: presumed dead, its row removed`);
      await servers.gone(id);
    }
  };
}

/**
 * On the leader, every few seconds: the servers whose heartbeat is older than ALIVE_MS,
 * and those with no row that left a job sending (a stop that could not count it), are
 * handed to `rescue`. Errors are logged; the next look tries again.
 */
export function createRescuer(options: RescuerOptions) {
  const { servers, log, leads } = options;
  const staleMs = options.staleMs ?? ALIVE_MS;
  const rescue = options.rescue ?? forgetServers(servers, log);
  let timer: ReturnType<typeof setInterval> | undefined;
  let looking: Promise<void> = Promise.resolve();

  async function look(): Promise<void> {
    if (!leads()) return;
    try {
      const stale = (await servers.list()).filter((s) => s.ageMs > staleMs).map((s) => s.id);
      const dead = [...new Set([...stale, ...(await servers.orphans())])];
      if (dead.length > 0) await rescue(dead);
    } catch (error) {
      log.error(`servers: cannot rescue the work of servers presumed dead: ${errorMessage(error)}`);
    }
  }

  return {
    start(): void {
      timer = setInterval(() => {
        looking = looking.then(look);
      }, options.everyMs ?? RESCUE_EVERY_MS);
      timer.unref();
    },
    async stop(): Promise<void> {
      clearInterval(timer);
      await looking;
    },
  };
}
