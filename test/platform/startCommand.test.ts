import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { findFreePort } from '../../lib/freePort';
import { eventually } from '../support/eventually';

/**
 * The README's first command on its embedded defaults: `npm start` with neither DATABASE_URL
 * nor TEMPORAL_ADDRESS runs an embedded PostgreSQL and a Temporal dev server under DATA_DIR,
 * serves /health 200, stops every child on Ctrl-C, and finds its data again on the next start.
 */
/** The processes whose parent is `pid`, with their arguments and environment (Linux's /proc). */
function childProcesses(pid: number): Array<{ pid: number; cmdline: string[]; environ: string[] }> {
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent's pid is the field after the command's parenthesised name.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== pid) continue;
      const read = (file: string) => fs.readFileSync(`/proc/${entry}/${file}`, 'utf8').split('\0').filter(Boolean);
      found.push({ pid: Number(entry), cmdline: read('cmdline'), environ: read('environ') });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

describe('the start command on embedded defaults', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-start-'));
  fs.chmodSync(dataDir, 0o755);
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  async function start() {
    const ports = { api: await findFreePort(), pg: await findFreePort(), temporal: await findFreePort(), ui: await findFreePort() };
    const env: Record<string, string> = { ...(process.env as Record<string, string>) };
    for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'SMTP_URL', 'MAILROOM_WORKFLOW_BUNDLE']) delete env[name];
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: {
        ...env,
        DATA_DIR: dataDir,
        PORT: String(ports.api),
        EMBEDDED_POSTGRES_PORT: String(ports.pg),
        EMBEDDED_TEMPORAL_PORT: String(ports.temporal),
        EMBEDDED_TEMPORAL_UI_PORT: String(ports.ui),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    readline.createInterface({ input: child.stdout }).on('line', (l) => lines.push(l));
    readline.createInterface({ input: child.stderr }).on('line', (l) => lines.push(l));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = `http://127.0.0.1:${ports.api}`;
    await eventually(
      async () => {
        // 200 "degraded" (Temporal not answering yet) keeps a load balancer sending; ready is "ok" (contract 2).
        const res = await fetch(`${url}/health`);
        const body = (await res.json().catch(() => null)) as { status?: string } | null;
        if (res.status !== 200 || body?.status !== 'ok') throw new Error(`health ${res.status} ${JSON.stringify(body)}`);
      },
      90_000,
      250,
    ).catch((err) => {
      throw new Error(`${err.message}\n${lines.slice(-30).join('\n')}`);
    });
    return { child, url, ui: `http://127.0.0.1:${ports.ui}`, lines, exited };
  }

  it('starts, serves /health and the Temporal UI, stops cleanly, and keeps its data', async () => {
    const first = await start();
    expect(await (await fetch(`${first.url}/health`)).json()).toEqual({ status: 'ok', database: 'ok', temporal: 'ok' });
    expect((await fetch(first.ui)).status).toBe(200);
    // One line for a new user: where the API and the Temporal UI are, and what to do next.
    const ready = await eventually(() => first.lines.find((l) => l.startsWith('Mailroom is ready: ')) ?? false, 10_000, 100);
    expect(ready).toContain(`Temporal UI ${first.ui}`);
    expect(ready).toContain('README "Quick start"');
    // The worker processes run with the memory settings of the deployment guide.
    const workers = childProcesses(first.child.pid!).filter((p) => p.cmdline.some((arg) => arg.includes('worker/main')));
    expect(workers.map((w) => w.environ.find((v) => v.startsWith('WORKER_ROLE='))).sort()).toEqual(['WORKER_ROLE=main', 'WORKER_ROLE=webhooks']);
    for (const worker of workers) {
      expect(worker.cmdline).toContain('--max-old-space-size=384');
      expect(worker.environ).toContain('MALLOC_ARENA_MAX=2');
    }
    const signup = await fetch(`${first.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'keeper@example.com', password: 'a durable password' }),
    });
    expect(signup.status).toBe(201);
    first.child.kill('SIGINT');
    expect(await first.exited).toBe(0);
    expect(first.lines.join('\n')).toContain('embedded PostgreSQL stopped');

    const second = await start();
    const login = await fetch(`${second.url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'keeper@example.com', password: 'a durable password' }),
    });
    expect(login.status).toBe(200);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 240_000);
});
