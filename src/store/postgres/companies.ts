import { companySealedIn } from "../../db/companies.ts";
import type { Sealer } from "../../db/sealer.ts";
import { tokenFields, type TokenColumns } from "../../db/token-rows.ts";
import type { CompanyStore } from "../contract.ts";
import type { Queryable } from "./pool.ts";
import { pgTokenRows } from "./token-rows.ts";

interface Row extends TokenColumns {
  company_id: string;
}

/** The agencies' tokens on PostgreSQL, sealed as on SQLite (src/db/companies.ts). */
export function pgCompanies(db: Queryable, sealer: Sealer): CompanyStore {
  return {
    async save(token, now) {
      if (!token.companyId) throw new Error("refusing to store a company token without a company_id");
      const { companyId } = token;
      const accessToken = sealer.seal(token.accessToken, companySealedIn("access_token", companyId));
      const refreshToken = sealer.seal(token.refreshToken, companySealedIn("refresh_token", companyId));
      await db.query(`
        INSERT INTO companies (company_id, access_token, refresh_token, expires_at, installed_at, updated_at)
        VALUES ($1, $2, $3, $4, $5, $5)
        ON CONFLICT (company_id) DO UPDATE SET
          access_token = excluded.access_token, refresh_token = excluded.refresh_token,
          expires_at = excluded.expires_at, updated_at = excluded.updated_at, refresh_error = '',
          refresh_lease_until = 0, token_serial = companies.token_serial + 1`, [companyId, accessToken, refreshToken, token.expiresAt, now]);
    },
    async get(companyId) {
      const row = (await db.query<Row>("SELECT * FROM companies WHERE company_id = $1", [companyId])).rows[0];
      return row && { companyId: row.company_id, ...tokenFields(row, sealer, "companies", row.company_id) };
    },
    async ids() {
      return (await db.query<Row>("SELECT company_id FROM companies ORDER BY company_id")).rows.map((row) => row.company_id);
    },
    ...pgTokenRows(db, sealer, { table: "companies", id: "company_id" }),
  };
}
