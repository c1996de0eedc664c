/**
 * The return path of outbound mail (contract 20): with INBOUND_MX_HOST set, each email's SMTP
 * MAIL FROM is `bounces+<emailId>@<RETURN_PATH_SUBDOMAIN>.<sender domain>`, so a bounce sent back
 * to it names the email by its address alone, even when it quotes none of the message. Written
 * here and read back here (services/inbound/deliveryReports.ts), so both sides agree.
 */
const LOCAL_PART = 'bounces';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The envelope sender of the email `emailId` sent from the verified domain `senderDomain`. */
export function returnPathAddress(emailId: string, subdomain: string, senderDomain: string): string {
  return `${LOCAL_PART}+${emailId}@${subdomain}.${senderDomain.toLowerCase()}`;
}

/**
 * The email id and sender domain a return-path address names; null for any other address (a
 * local part other than `bounces+<uuid>`, or a domain outside `<subdomain>.`). Letter case is
 * ignored: relays may lower- or upper-case what they send back.
 */
export function parseReturnPathAddress(address: string, subdomain: string): { emailId: string; senderDomain: string } | null {
  const at = address.lastIndexOf('@');
  if (at < 0) return null;
  const local = address.slice(0, at).toLowerCase();
  const domain = address
    .slice(at + 1)
    .toLowerCase()
    .replace(/\.$/, '');
  const prefix = `${LOCAL_PART}+`;
  const zone = `${subdomain.toLowerCase()}.`;
  if (!local.startsWith(prefix) || !domain.startsWith(zone)) return null;
  const emailId = local.slice(prefix.length);
  const senderDomain = domain.slice(zone.length);
  if (!UUID.test(emailId) || !senderDomain) return null;
  return { emailId, senderDomain };
}
