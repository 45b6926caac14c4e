import { afterAll } from "vitest";
import { stopTestPostgres } from "./test-store.ts";

// The postgres project's setup file (vitest.config.ts): each file's throwaway server stops once its tests end.
afterAll(stopTestPostgres);
