/** One finding of `bridge doctor`: what was checked, how it went, and for warn/fail what to do. */
export interface Check {
  check: string;
  status: "ok" | "warn" | "fail";
  detail: string;
}

export const ok = (check: string, detail: string): Check => ({ check, status: "ok", detail });
export const warn = (check: string, detail: string): Check => ({ check, status: "warn", detail });
export const fail = (check: string, detail: string): Check => ({ check, status: "fail", detail });
