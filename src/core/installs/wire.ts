import type { Calls, Context, Installs, Stores } from "../core-types.ts";
import { createExchanges } from "./exchanges.ts";
import { completeInstall, type InstallDeps } from "./install.ts";
import { createLaterInstaller } from "./install-later.ts";
import { createPacer } from "./pace.ts";
import { createSync } from "./sync.ts";
import { createCompanyTokens, createTokenService } from "./tokens.ts";
import { createUninstaller } from "./uninstall.ts";
import { createCompanyUninstaller } from "./uninstall-company.ts";

/** Installs and uninstalls, the locations' and agencies' tokens, reconciliation. */
export function wireInstalls({ config, log, now, tuning }: Context, { tokens, companies, leases }: Stores, { crm }: Calls): Installs {
  const companyTokens = createCompanyTokens({ companies, crm, now, log, storeRetryMs: tuning.tokenStoreRetryMs });
  const tokenService = createTokenService({ tokens, crm, companyTokens, companies, now, log, storeRetryMs: tuning.tokenStoreRetryMs });
  const uninstall = createUninstaller({ tokens, tokenService, now, log });
  const installDeps: InstallDeps = {
    crm,
    tokens,
    companies,
    exchanges: createExchanges({ leases, log }),
    now,
    log,
    pace: createPacer(tuning.bulkPaceMs ?? 110),
    allowedCompanyIds: config.allowedCompanyIds,
  };
  return {
    tokenService,
    companyTokens,
    pace: installDeps.pace,
    exchanges: installDeps.exchanges,
    install: (code) => completeInstall(installDeps, code),
    installLocation: createLaterInstaller({ ...installDeps, companyTokens, waitMs: tuning.installWaitMs }),
    uninstall,
    uninstallCompany: createCompanyUninstaller({ tokens, companies, companyTokens, uninstall, now, log }),
    sync: createSync({ ...installDeps, companyTokens }),
  };
}
