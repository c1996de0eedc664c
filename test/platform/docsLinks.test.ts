import fs from 'node:fs';
import path from 'node:path';

/**
 * The documentation's links stay inside the repository and lead somewhere: for README.md,
 * ARCHITECTURE.md and every docs/**\/*.md, each relative Markdown link (inline, reference
 * definition, or an HTML href/src) names a file or folder that exists, never a path above the
 * repository's root; `file.md#anchor` must name a heading of that file, slugged as GitHub does.
 * http(s): and mailto: links and pure #anchors are not checked; any other scheme fails (it leaves
 * the repository). README.md stays a page for users: at most 400 lines.
 * Reads files only: no database, no Temporal.
 */
const root = path.join(__dirname, '..', '..');
const README_MAX_LINES = 400;

/** A heading's anchor as GitHub makes it: its text lower-cased, punctuation dropped, spaces as hyphens. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/`/g, '')
    .replace(/\*/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

interface MarkdownLines {
  /** Lines outside fenced code blocks, with their 1-based numbers. */
  prose: Array<{ line: number; text: string }>;
}

function proseLines(markdown: string): MarkdownLines {
  const prose: MarkdownLines['prose'] = [];
  let fence: string | null = null;
  markdown.split('\n').forEach((text, i) => {
    const opener = /^ {0,3}(`{3,}|~{3,})/.exec(text);
    if (fence) {
      if (opener && opener[1][0] === fence[0] && opener[1].length >= fence.length && text.trim() === opener[1]) fence = null;
      return;
    }
    if (opener) {
      fence = opener[1];
      return;
    }
    prose.push({ line: i + 1, text });
  });
  return { prose };
}

/** The anchors of a Markdown file's ATX headings, duplicates numbered as GitHub numbers them. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(markdown).prose) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(text);
    if (!heading) continue;
    const slug = githubSlug(heading[1]);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every link target of a Markdown text outside code (fenced blocks and inline code spans). */
export function linkTargets(markdown: string): Array<{ line: number; target: string }> {
  const targets: Array<{ line: number; target: string }> = [];
  for (const { line, text } of proseLines(markdown).prose) {
    const withoutCode = text.replace(/(`+)[\s\S]*?\1/g, '');
    const inline = /!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g;
    for (const match of withoutCode.matchAll(inline)) targets.push({ line, target: match[1].replace(/^<|>$/g, '') });
    const definition = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(withoutCode);
    if (definition) targets.push({ line, target: definition[1].replace(/^<|>$/g, '') });
    for (const match of withoutCode.matchAll(/<(?:a|img)\s[^>]*?\b(?:href|src)="([^"]+)"/gi)) targets.push({ line, target: match[1] });
  }
  return targets;
}

/** What is wrong with one link of `file` (a path relative to `repoRoot`), or null when it resolves. */
export function linkProblem(repoRoot: string, file: string, target: string): string | null {
  if (/^(https?:|mailto:)/i.test(target) || target.startsWith('#')) return null;
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return `${target}: leaves the repository`;
  const [pathPart, fragment] = target.split('#', 2);
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathPart.split('?')[0]);
  } catch {
    return `${target}: not a valid path`;
  }
  const resolved = decoded.startsWith('/') ? path.join(repoRoot, decoded) : path.resolve(repoRoot, path.dirname(file), decoded);
  const relative = path.relative(repoRoot, resolved);
  if (relative.startsWith('..') || path.isAbsolute(relative)) return `${target}: leaves the repository`;
  if (!fs.existsSync(resolved)) return `${target}: ${relative || '.'} does not exist`;
  if (fragment && resolved.endsWith('.md') && fs.statSync(resolved).isFile()) {
    const anchors = headingAnchors(fs.readFileSync(resolved, 'utf8'));
    if (!anchors.has(decodeURIComponent(fragment).toLowerCase())) return `${target}: ${relative} has no heading #${fragment}`;
  }
  return null;
}

function markdownFilesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFilesUnder(full);
    return entry.isFile() && entry.name.endsWith('.md') ? [full] : [];
  });
}

const documents = ['README.md', 'ARCHITECTURE.md', ...markdownFilesUnder(path.join(root, 'docs')).map((file) => path.relative(root, file))];

function problemsOf(file: string): string[] {
  const markdown = fs.readFileSync(path.join(root, file), 'utf8');
  return linkTargets(markdown).flatMap(({ line, target }) => {
    const problem = linkProblem(root, file, target);
    return problem ? [`${file}:${line}: ${problem}`] : [];
  });
}

describe('links in the documentation', () => {
  it('finds the documents', () => {
    expect(documents).toEqual(expect.arrayContaining(['README.md', 'ARCHITECTURE.md']));
    expect(documents.filter((file) => file.startsWith(`docs${path.sep}`)).length).toBeGreaterThan(0);
  });

  it.each(documents)('%s: every relative link resolves inside the repository', (file) => {
    expect(problemsOf(file)).toEqual([]);
  });

  it('README.md has at most 400 lines', () => {
    const lines = fs.readFileSync(path.join(root, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });
});

describe('the link checker', () => {
  it('slugs headings as GitHub does', () => {
    expect(githubSlug('Run on your own Temporal cluster')).toBe('run-on-your-own-temporal-cluster');
    expect(githubSlug('Outgoing webhooks: which addresses a WEBHOOK step may call')).toBe('outgoing-webhooks-which-addresses-a-webhook-step-may-call');
    expect(githubSlug('`DELIVERY_BATCH_MAX` and `/v1/send`')).toBe('delivery_batch_max-and-v1send');
    expect([...headingAnchors('# A\n## B\n```sh\n# not a heading\n```\n## B\n')]).toEqual(['a', 'b', 'b-1']);
  });

  it('reads links outside code only', () => {
    const markdown = ['[a](docs/x.md) `[b](nowhere.md)` ![c](img.png "t")', '```', '[d](inside-code.md)', '```', '[e]: <ref.md>'].join('\n');
    expect(linkTargets(markdown).map((link) => link.target)).toEqual(['docs/x.md', 'img.png', 'ref.md']);
  });

  it('refuses what is missing, what leaves the repository and an unknown anchor', () => {
    expect(linkProblem(root, 'README.md', 'ARCHITECTURE.md')).toBeNull();
    expect(linkProblem(root, 'README.md', 'docs')).toBeNull();
    expect(linkProblem(root, 'README.md', 'https://example.com/x')).toBeNull();
    expect(linkProblem(root, 'README.md', '#anything')).toBeNull();
    expect(linkProblem(root, 'README.md', 'docs/no-such-file.md')).toMatch(/does not exist/);
    expect(linkProblem(root, 'docs/testing.md', '../../outside.md')).toMatch(/leaves the repository/);
    expect(linkProblem(root, 'README.md', 'file:///etc/passwd')).toMatch(/leaves the repository/);
    expect(linkProblem(root, 'README.md', 'ARCHITECTURE.md#no-such-heading')).toMatch(/has no heading/);
    expect(linkProblem(root, 'README.md', 'ARCHITECTURE.md#one-rule-per-layer')).toBeNull();
  });
});
