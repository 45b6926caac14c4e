// DATABASE_URL as it may be shown: no pg here, so config and logs load none.
/**
 * A database URL as it may be shown (logs, errors, `doctor`): its password, in the
 * userinfo or a `password=` parameter, replaced by `***`; the rest as given.
 */
export function maskDatabaseUrl(url: string): string {
  const masked = url.replace(/^([a-z][\w+.-]*:\/\/[^:@/?#]*:)[^@/?#]*@/i, "$1***@");
  return masked.replace(/([?&]password=)[^&#]*/gi, "$1***");
}

/** `text` with every occurrence of the URL's password replaced by `***` (an error a driver wrote). */
export function withoutPassword(text: string, url: string): string {
  const parsed = URL.parse(url);
  const secrets = [parsed?.password, parsed?.searchParams.get("password")].filter((s): s is string => !!s);
  let clean = text.split(url).join(maskDatabaseUrl(url));
  for (const secret of secrets) {
    clean = clean.split(secret).join("***");
    const decoded = safeDecode(secret);
    if (decoded !== secret) clean = clean.split(decoded).join("***");
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
