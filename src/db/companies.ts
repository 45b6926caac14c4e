import { createTokenRows, tokenFields, type TokenColumns, type TokenFields } from "./token-rows.ts";
import { createSealer, type SealContext, type Sealer } from "./sealer.ts";
import type { Db } from "./index.ts";

/** An agency (company) install's token. */
export interface CompanyRecord extends TokenFields {
  companyId: string;
}

export interface NewCompanyToken {
  companyId: string;
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
}

export type CompanyStore = ReturnType<typeof createCompanyStore>;

interface Row extends TokenColumns {
  company_id: string;
}

/**
 * Typed queries over the companies table: one token per agency, sealed like the
 * locations' (bound to this table, its column and the company's row), and leased for
 * a refresh the same way, so the server and a CLI process never spend one refresh
 * token twice.
 */
export function createCompanyStore(db: Db, sealer: Sealer = createSealer(undefined)) {
  // An agency installing again replaces its token and clears a refusal noted before.
  const upsert = db.prepare<[NewCompanyToken & { now: number }]>(`
    INSERT INTO companies (company_id, access_token, refresh_token, expires_at, installed_at, updated_at)
    VALUES (@companyId, @accessToken, @refreshToken, @expiresAt, @now, @now)
    ON CONFLICT (company_id) DO UPDATE SET
      access_token = excluded.access_token, refresh_token = excluded.refresh_token,
      expires_at = excluded.expires_at, updated_at = excluded.updated_at, refresh_error = '',
      refresh_lease_until = 0, token_serial = token_serial + 1`);
  const selectOne = db.prepare<[string], Row>("SELECT * FROM companies WHERE company_id = ?");
  const selectAll = db.prepare<[], Row>("SELECT * FROM companies ORDER BY company_id");
  const rows = createTokenRows(db, sealer, { table: "companies", id: "company_id" });

  return {
    save(token: NewCompanyToken, now: number): void {
      if (!token.companyId) throw new Error("refusing to store a company token without a company_id");
      const { companyId } = token;
      const accessToken = sealer.seal(token.accessToken, companySealedIn("access_token", companyId));
      const refreshToken = sealer.seal(token.refreshToken, companySealedIn("refresh_token", companyId));
      upsert.run({ ...token, accessToken, refreshToken, now });
    },
    get(companyId: string): CompanyRecord | undefined {
      const row = selectOne.get(companyId);
      return row && fromRow(row, sealer);
    },
    /** Every stored company's id: listing them opens no secret. */
    ids(): string[] {
      return selectAll.all().map((row) => row.company_id);
    },
    ...rows,
  };
}

/** Where a company's secret is sealed: it opens only in the same column of the same row. */
export function companySealedIn(column: "access_token" | "refresh_token", companyId: string): SealContext {
  return { table: "companies", column, row: companyId };
}

function fromRow(row: Row, sealer: Sealer): CompanyRecord {
  return { companyId: row.company_id, ...tokenFields(row, sealer, "companies", row.company_id) };
}
