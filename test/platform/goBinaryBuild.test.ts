import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startGoModuleProxy } from '../support/goModuleProxy';
import type { GoModuleProxy } from '../support/goModuleProxy';

/**
 * The first `npm start` builds the Temporal CLI with `go install`, downloading a few hundred
 * modules. A download broken off by the network must not end the start: the build retries,
 * says what it is doing while it runs, and only after its last attempt fails with go's own
 * error and the command to run by hand. Here the same build code (scripts/temporal-binary.cjs)
 * builds a tiny module from a local Go proxy that fails module downloads on purpose.
 */
const root = path.resolve(__dirname, '../..');
const goBin = ['/usr/local/go/bin/go', ...(process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'go'))].find((candidate) =>
  fs.existsSync(candidate),
);

describe('building a Go tool on first start', () => {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-go-build-'));
  // Shared by both tests: compiling the standard library once is the slow part.
  const goCache = path.join(workDir, 'gocache');
  let proxy: GoModuleProxy | undefined;

  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  afterAll(() => {
    // Go makes its module cache read-only; `go clean -modcache` knows how to remove it.
    for (const entry of fs.readdirSync(workDir)) {
      if (entry.startsWith('modcache')) {
        spawnSync(goBin!, ['clean', '-modcache'], { env: { ...process.env, GOMODCACHE: path.join(workDir, entry) } });
      }
    }
    fs.rmSync(workDir, { recursive: true, force: true });
  });

  /** Runs ensureGoBinary in a child process, as prestart does; resolves with its exit code and stderr. */
  function build(name: string, options: { attempts: number; onStderr?: (text: string, child: ChildProcess) => void }) {
    const binary = path.join(workDir, name, 'bin', 'hello');
    const env = {
      GOPROXY: proxy!.url,
      GOSUMDB: 'off',
      GOPRIVATE: '',
      GONOPROXY: '',
      GOTOOLCHAIN: 'local',
      GOMODCACHE: path.join(workDir, `modcache-${name}`),
    };
    const buildOptions = {
      binary,
      target: proxy!.target,
      label: 'the test tool',
      env,
      attempts: options.attempts,
      retryPausesMs: [300],
      progressIntervalMs: 1000,
    };
    // Like scripts/start.ts, it handles SIGINT itself (and must not be stuck retrying when it comes).
    const script = `
      process.on('SIGINT', () => undefined);
      const { ensureGoBinary } = require(process.argv[1]);
      try {
        ensureGoBinary(JSON.parse(process.argv[2]));
      } catch (err) {
        process.stderr.write('[mailroom] ' + err.message + '\\n');
        process.exit(1);
      }
    `;
    const child = spawn(process.execPath, ['-e', script, path.join(root, 'scripts/temporal-binary.cjs'), JSON.stringify(buildOptions)], {
      env: { ...process.env, GOCACHE: goCache },
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true, // its own process group, which a Ctrl-C would reach as a whole
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      options.onStderr?.(stderr, child);
    });
    return new Promise<{ code: number | null; stderr: string; binary: string }>((resolve) => child.once('close', (code) => resolve({ code, stderr, binary })));
  }

  it('retries after a module download fails, reports progress, and ends with a working binary', async () => {
    expect(goBin).toBeDefined();
    proxy = await startGoModuleProxy({ failZipRequests: 1 });

    const result = await build('retry', { attempts: 3 });

    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    // The first attempt failed on the broken download, saying why, and the second one built it.
    expect(proxy.failedZipRequests()).toBe(1);
    expect(proxy.zipRequests()).toBe(2);
    expect(result.stderr).toMatch(
      /Building the test tool failed \(attempt 1 of 3\):\n {2}go: mailroom\.test\/hello@v1\.0\.0: .*reading http:\/\/127\.0\.0\.1:\d+\/.*\.zip: 500 Internal Server Error\n {2}\tserver response: simulated: stream error/,
    );
    expect(result.stderr).toContain('the next attempt resumes');
    expect(result.stderr).toContain('retrying (attempt 2 of 3)');
    expect(result.stderr).toMatch(/Built the test tool in \d+/);
    // While go ran: periodic lines with the elapsed time and what go is doing.
    expect(result.stderr).toMatch(/\[mailroom\] Building the test tool \(attempt 2 of 3\): \d+s elapsed, (compiling packages|downloading modules|resolving)/);
    // The raw `go: downloading` chatter goes to the log file, not the terminal.
    expect(result.stderr).not.toContain('go: downloading');
    expect(fs.readFileSync(path.join(path.dirname(result.binary), 'hello-build.log'), 'utf8')).toContain(
      `go: downloading ${proxy.modulePath} ${proxy.version}`,
    );

    const run = spawnSync(result.binary, { encoding: 'utf8' });
    expect(run.stdout.trim()).toBe(proxy.greeting);
    // No lock or staging directory left behind.
    expect(fs.readdirSync(path.dirname(result.binary)).sort()).toEqual(['hello', 'hello-build.log']);
  }, 300_000);

  it('gives up after its last attempt with go’s error and the command to run by hand', async () => {
    proxy = await startGoModuleProxy({ failZipRequests: Infinity });

    const result = await build('fail', { attempts: 2 });

    expect(result.code).toBe(1);
    expect(proxy.zipRequests()).toBe(2);
    expect(fs.existsSync(result.binary)).toBe(false);
    const report = result.stderr.slice(result.stderr.indexOf('[mailroom] Building the test tool failed 2 times'));
    expect(report).toContain('(go exited with 1)');
    expect(report).toMatch(new RegExp(`${proxy.target}: reading ${proxy.url}/.*\\.zip: 500 Internal Server Error`));
    expect(report).toContain(`full output: ${path.join(path.dirname(result.binary), 'hello-build.log')}`);
    expect(report).toContain(
      `To build it by hand, run:\n  cd ${os.tmpdir()} && GOPROXY=${proxy.url} GOSUMDB=off GOPRIVATE='' GONOPROXY='' GOTOOLCHAIN=local ` +
        `GOMODCACHE=${path.join(workDir, 'modcache-fail')} GOBIN=${path.join(workDir, 'fail', 'bin')} go install ${proxy.target}`,
    );
  }, 300_000);

  it('stops at Ctrl-C instead of retrying', async () => {
    proxy = await startGoModuleProxy({ holdZipRequests: true });
    let interrupted = false;

    const result = await build('interrupt', {
      attempts: 3,
      onStderr: (stderr, child) => {
        // Once go is busy downloading, press Ctrl-C: SIGINT to the whole process group.
        if (!interrupted && proxy!.zipRequests() > 0 && /elapsed/.test(stderr)) {
          interrupted = true;
          process.kill(-child.pid!, 'SIGINT');
        }
      },
    });

    expect(interrupted).toBe(true);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/\[mailroom\] Building the test tool was interrupted \((SIGINT|exit 130)\); the next start resumes it\./);
    expect(result.stderr).not.toContain('retrying');
    expect(proxy.zipRequests()).toBe(1);
    expect(fs.existsSync(result.binary)).toBe(false);
  }, 120_000);
});
