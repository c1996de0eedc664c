import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import crypto from 'node:crypto';

/**
 * The README's Quick start as data: its first ```sh block under the heading that starts with
 * "## Quick start", cut into the commands a reader pastes, and each `curl` among them read as the
 * request it makes. test/platform/quickStart.test.ts runs those very commands, so the README
 * cannot drift from what works.
 */
export function quickStartBlock(markdown: string, source: string): string {
  const heading = /^## Quick start.*$/m.exec(markdown);
  if (!heading) throw new Error(`${source} has no "## Quick start" heading`);
  const rest = markdown.slice(heading.index);
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(rest);
  if (!block) throw new Error(`${source}: no \`\`\`sh block under "${heading[0]}"`);
  return block[1];
}

/** The commands of a shell block: continued lines (`\` at the end) joined, comments and blank lines left out. */
export function shellCommands(block: string): string[] {
  const commands: string[] = [];
  let current = '';
  for (const line of block.split('\n')) {
    if (!current && (!line.trim() || line.trim().startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      current += line.slice(0, -1);
      continue;
    }
    commands.push((current + line).trim());
    current = '';
  }
  if (current) throw new Error(`the block ends inside a continued line: ${current}`);
  return commands;
}

/** A `curl` command as the request it makes; `$VAR` references are kept as written. */
export interface CurlRequest {
  /** The variable its answer is assigned to (`PROJECT=$(curl …)`), if any. */
  assignedTo: string | null;
  method: string;
  /** As written, e.g. `$API/contacts?limit=10`. */
  url: string;
  headers: Record<string, string>;
  /** The `-d` body, as written. */
  data: string | null;
  /** `-c` (the cookie jar written) and `-b` (the one sent). */
  cookieJarWritten: string | null;
  cookieJarSent: string | null;
  /** `-o`: the file the answer goes to. */
  output: string | null;
}

/** Shell words: single quotes literal, double quotes and bare words as written (variables unexpanded). */
function shellWords(command: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (c === ' ' || c === '\t') {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === "'" || c === '"') {
      const end = command.indexOf(c, i + 1);
      if (end < 0) throw new Error(`unterminated ${c} in: ${command}`);
      word = (word ?? '') + command.slice(i + 1, end);
      i = end;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** The request of a `curl …` or `NAME=$(curl …)` command; null for any other command. */
export function parseCurl(command: string): CurlRequest | null {
  const assigned = /^([A-Z_][A-Z0-9_]*)=\$\((curl .*)\)$/.exec(command);
  const words = shellWords(assigned ? assigned[2] : command);
  if (words[0] !== 'curl') return null;
  const request: CurlRequest = {
    assignedTo: assigned ? assigned[1] : null,
    method: 'GET',
    url: '',
    headers: {},
    data: null,
    cookieJarWritten: null,
    cookieJarSent: null,
    output: null,
  };
  let explicitMethod: string | null = null;
  for (let i = 1; i < words.length; i++) {
    const word = words[i];
    const value = () => {
      if (i + 1 >= words.length) throw new Error(`${word} without a value in: ${command}`);
      return words[++i];
    };
    if (word === '-sS' || word === '-s' || word === '-S') continue;
    else if (word === '-H') {
      const header = value();
      const colon = header.indexOf(':');
      request.headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
    } else if (word === '-d') request.data = value();
    else if (word === '-c') request.cookieJarWritten = value();
    else if (word === '-b') request.cookieJarSent = value();
    else if (word === '-o') request.output = value();
    else if (word === '-X') explicitMethod = value();
    else if (word.startsWith('-')) throw new Error(`curl option ${word} is not one the quick start test knows: ${command}`);
    else if (request.url) throw new Error(`two URLs in: ${command}`);
    else request.url = word;
  }
  request.method = explicitMethod ?? (request.data !== null ? 'POST' : 'GET');
  return request;
}

export interface ShellResult {
  stdout: string;
  stderr: string;
  status: number;
}

/**
 * One bash process that runs commands one at a time, as a reader pasting them into a terminal:
 * variables set by one command are there for the next. Each command's stdin is /dev/null, so
 * none can read the commands that follow.
 */
export class ShellSession {
  private readonly child: ChildProcessWithoutNullStreams;
  private stdout = '';
  private stderr = '';
  private readonly marker = `--quickstart-${crypto.randomBytes(6).toString('hex')}--`;
  private waiting: (() => void) | null = null;
  private readonly exited: Promise<void>;

  constructor(cwd: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd, env, stdio: 'pipe' });
    this.child.stdout.setEncoding('utf8');
    this.child.stderr.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      this.stdout += chunk;
      this.waiting?.();
    });
    this.child.stderr.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  run(command: string, timeoutMs = 30_000): Promise<ShellResult> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        reject(new Error(`no end of command within ${timeoutMs} ms: ${command}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`));
      }, timeoutMs);
      const end = new RegExp(`\\n${this.marker}:(\\d+)\\n`);
      this.waiting = () => {
        const found = end.exec(this.stdout);
        if (!found) return;
        clearTimeout(timer);
        this.waiting = null;
        const result = { stdout: this.stdout.slice(0, found.index), stderr: this.stderr, status: Number(found[1]) };
        this.stdout = this.stdout.slice(found.index + found[0].length);
        this.stderr = '';
        resolve(result);
      };
      this.child.stdin.write(`{ ${command}\n} </dev/null\nprintf '\\n%s:%d\\n' '${this.marker}' $?\n`);
    });
  }

  async close(): Promise<void> {
    this.child.stdin.end();
    await this.exited;
  }
}
