/**
 * A realistic contacts CSV for the import benchmarks: email, first_name, last_name, plan, score,
 * signed_up_at, deterministic so runs compare.
 */
const FIRST = [
  'james',
  'mary',
  'john',
  'patricia',
  'robert',
  'jennifer',
  'michael',
  'linda',
  'william',
  'elizabeth',
  'david',
  'barbara',
  'richard',
  'susan',
  'joseph',
  'jessica',
  'thomas',
  'sarah',
  'charles',
  'karen',
  'chris',
  'nancy',
  'daniel',
  'lisa',
  'matthew',
  'betty',
  'anthony',
  'margaret',
  'mark',
  'sandra',
  'paul',
  'ashley',
  'steven',
  'emily',
  'andrew',
  'donna',
  'kenneth',
  'michelle',
  'joshua',
  'carol',
  'kevin',
  'amanda',
  'brian',
  'dorothy',
  'george',
  'melissa',
  'timothy',
  'deborah',
  'ronald',
  'stephanie',
  'ada',
  'alan',
  'grace',
  'linus',
  'sofia',
  'lucas',
  'mia',
  'noah',
  'emma',
  'liam',
];
const LAST = [
  'smith',
  'johnson',
  'williams',
  'brown',
  'jones',
  'garcia',
  'miller',
  'davis',
  'rodriguez',
  'martinez',
  'hernandez',
  'lopez',
  'gonzalez',
  'wilson',
  'anderson',
  'thomas',
  'taylor',
  'moore',
  'jackson',
  'martin',
  'lee',
  'perez',
  'thompson',
  'white',
  'harris',
  'sanchez',
  'clark',
  'ramirez',
  'lewis',
  'robinson',
  'walker',
  'young',
  'allen',
  'king',
  'wright',
  'scott',
  'torres',
  'nguyen',
  'hill',
  'flores',
  'green',
  'adams',
  'nelson',
  'baker',
  'hall',
  'rivera',
  'campbell',
  'mitchell',
  'carter',
  'roberts',
  'lovelace',
  'turing',
  'hopper',
  'torvalds',
  'muller',
  'rossi',
];
const DOMAINS = [
  'gmail.com',
  'yahoo.com',
  'outlook.com',
  'hotmail.com',
  'icloud.com',
  'proton.me',
  'aol.com',
  'gmx.de',
  'web.de',
  'mail.ru',
  'yandex.ru',
  'orange.fr',
  'free.fr',
  'libero.it',
  'example.com',
  'acme.io',
  'initech.com',
  'globex.net',
  'umbrella.co',
  'hooli.xyz',
];
const PLANS = ['free', 'free', 'free', 'starter', 'pro', 'team', 'enterprise'];

/** Deterministic, so runs compare: mulberry32. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const cap = (s: string) => s[0].toUpperCase() + s.slice(1);

/**
 * As many rows as fit under `maxBytes`, each email unique; `emailPrefix` keeps the emails of
 * several files apart. The same arguments always build the same file.
 */
export function buildContactsCsv(maxBytes: number, emailPrefix = ''): { content: Buffer; rows: number } {
  const random = rng(42);
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
  const header = 'email,first_name,last_name,plan,score,signed_up_at\n';
  const lines: string[] = [header];
  let bytes = Buffer.byteLength(header);
  const start = Date.UTC(2023, 0, 1);
  const span = 3 * 365 * 86_400_000;
  const seen = new Set<string>();
  for (let n = 1; ; n++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    // The usual shapes of a local part (jsmith, james.smith, smithj, james), often with a one- or
    // two-digit number as people add; a repeat gets the running row number to stay unique.
    const shape = random();
    const base = shape < 0.4 ? `${first[0]}${last}` : shape < 0.7 ? `${first}.${last}` : shape < 0.85 ? `${last}${first[0]}` : first;
    const suffix = random() < 0.7 ? String(Math.floor(random() * 100)) : '';
    const domain = pick(DOMAINS);
    let email = `${emailPrefix}${base}${suffix}@${domain}`;
    for (let k = n; seen.has(email); k += 1_000_000) email = `${emailPrefix}${base}${k}@${domain}`;
    seen.add(email);
    const signedUp = new Date(start + Math.floor(random() * span)).toISOString().slice(0, 10);
    const line = `${email},${cap(first)},${cap(last)},${pick(PLANS)},${Math.floor(random() * 100)},${signedUp}\n`;
    const size = Buffer.byteLength(line);
    if (bytes + size > maxBytes) break;
    lines.push(line);
    bytes += size;
  }
  const content = Buffer.from(lines.join(''));
  if (content.length > maxBytes) throw new Error(`CSV is ${content.length} bytes, over ${maxBytes}`);
  return { content, rows: lines.length - 1 };
}
