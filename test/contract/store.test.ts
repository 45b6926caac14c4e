import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../../src/db/index.ts";
import { openStore } from "../../src/store/open.ts";
import { storeCases, type StoreFactory } from "./store-cases.ts";

// The store contract's cases (store-cases.ts), run on each implementation of it.

const sqlite: StoreFactory = {
  name: "sqlite",
  async open() {
    const dir = mkdtempSync(join(tmpdir(), "bridge-store-"));
    const db = openDb(join(dir, "bridge.db"));
    return {
      store: openStore({ encryptionKey: undefined }, db),
      async close() {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

storeCases(sqlite);
