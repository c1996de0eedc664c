/**
 * Domains of email forwarding (alias) services: an address there forwards to someone's real
 * mailbox, which the service keeps private. No maintained npm package lists these (checked
 * November 2026), so this short list lives here; a subdomain of a listed domain counts too
 * (addy.io and 33mail hand every user one). Extend it when a service adds a shared domain.
 */
export const aliasDomains: ReadonlySet<string> = new Set([
  // Apple Hide My Email (iCloud+)
  'privaterelay.appleid.com',
  // Firefox Relay
  'mozmail.com',
  'relay.firefox.com',
  // SimpleLogin (Proton)
  'simplelogin.com',
  'simplelogin.co',
  'simplelogin.fr',
  'aleeas.com',
  'slmail.me',
  'silomails.com',
  'slmails.com',
  '8alias.com',
  '8shield.net',
  'dralias.com',
  // addy.io (formerly AnonAddy)
  'addy.io',
  'anonaddy.com',
  'anonaddy.me',
  // DuckDuckGo Email Protection
  'duck.com',
  // Proton Pass aliases
  'passmail.net',
  'passmail.com',
  'passinbox.com',
  'passfwd.com',
  // 33mail
  '33mail.com',
]);
