// DATABASE_URL as it may be shown: no pg here, so config and logs load none.
/**
 * A database URL as it may be shown (logs, errors, `doctor`): its password, in the
 * userinfo or a `password=` parameter, replaced by `***`; the rest as given.
 */
export function maskDatabaseUrl(url: string): string {
  const masked = url.replace(/^([a-z][\w+.-]*:\/\/[^:@/?#]*:)[^/?#]*@/i, "$1***@");
  return masked.replace(/([?&]password=)[^&#]*/gi, "$1***");
}

/** A password this short is masked where it stands as one (`:…@`, `password=…`), not in every word it is part of. */
const SHORT = 8;

/**
 * `text` (an error a driver wrote) with the URL masked and its password replaced by `***`
 * wherever it appears; a short one only where it stands as the password.
 */
export function withoutPassword(text: string, url: string): string {
  const parsed = URL.parse(url);
  const secrets = [parsed?.password, parsed?.searchParams.get("password")].filter((s): s is string => !!s);
  let clean = text.split(url).join(maskDatabaseUrl(url));
  for (const secret of secrets.flatMap((s) => [...new Set([s, safeDecode(s)])])) {
    const forms = secret.length >= SHORT ? [secret] : [`:${secret}@`, `password=${secret}`];
    for (const form of forms) clean = clean.split(form).join(form.replace(secret, "***"));
  }
  return clean;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
