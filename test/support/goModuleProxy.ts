/**
 * A Go module proxy (the GOPROXY protocol: `<module>/@v/list`, `.info`, `.mod`, `.zip`) on
 * 127.0.0.1 serving one tiny `package main` module, whose module-zip downloads can be made to
 * fail: the test stand-in for the real proxy breaking off a download during a first build.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';

export interface GoModuleProxy {
  /** For GOPROXY. */
  url: string;
  modulePath: string;
  version: string;
  /** `go install` target: `<modulePath>@<version>`. */
  target: string;
  /** What the built program prints. */
  greeting: string;
  /** How many module-zip requests were made, and how many of those were failed on purpose. */
  zipRequests(): number;
  failedZipRequests(): number;
  close(): Promise<void>;
}

/** A zip archive of stored (uncompressed) entries: all a module zip needs. */
function zipArchive(files: Record<string, string>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const nameBytes = Buffer.from(name, 'utf8');
    const data = Buffer.from(text, 'utf8');
    const crc = zlib.crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0); // local file header signature
    local.writeUInt16LE(20, 4); // version needed to extract
    local.writeUInt16LE(0x0800, 6); // flags: UTF-8 names
    local.writeUInt16LE(0, 8); // method: stored
    local.writeUInt32LE(0, 10); // time, date
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0); // central directory header signature
    central.writeUInt16LE(20, 4); // version made by
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(0, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42); // local header offset (bytes 30..41: extra, comment, disk, attributes = 0)
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + data.length;
  }
  const centralDir = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); // end of central directory signature
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(centralDir.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, centralDir, end]);
}

/**
 * Starts the proxy. `failZipRequests`: how many module-zip downloads to answer with
 * 500 Internal Server Error before serving it (Infinity: always fail). `holdZipRequests`:
 * never answer them (a download in progress), until close().
 */
export async function startGoModuleProxy(options: { failZipRequests?: number; holdZipRequests?: boolean }): Promise<GoModuleProxy> {
  const modulePath = 'mailroom.test/hello';
  const version = 'v1.0.0';
  const greeting = 'hello from a module built by the retry test';
  const goMod = `module ${modulePath}\n\ngo 1.21\n`;
  // Go module zips hold every file under a `<module>@<version>/` prefix.
  const zip = zipArchive({
    [`${modulePath}@${version}/go.mod`]: goMod,
    [`${modulePath}@${version}/main.go`]: `package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(${JSON.stringify(greeting)}) }\n`,
  });
  let zipRequests = 0;
  let failed = 0;
  const base = `/${modulePath}/@v/`;

  const server = http.createServer((req, res) => {
    const url = req.url ?? '';
    const send = (status: number, body: string | Buffer, type = 'text/plain; charset=utf-8') => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    if (!url.startsWith(base)) return send(404, 'not found'); // other path prefixes go probes
    const file = url.slice(base.length);
    if (file === 'list') return send(200, `${version}\n`);
    if (file === `${version}.info`) return send(200, JSON.stringify({ Version: version, Time: '2026-01-01T00:00:00Z' }), 'application/json');
    if (file === `${version}.mod`) return send(200, goMod);
    if (file === `${version}.zip`) {
      zipRequests += 1;
      if (options.holdZipRequests) return;
      if (failed < (options.failZipRequests ?? 0)) {
        failed += 1;
        return send(500, 'simulated: stream error: stream ID 61; INTERNAL_ERROR; received from peer');
      }
      return send(200, zip, 'application/zip');
    }
    return send(404, 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    modulePath,
    version,
    target: `${modulePath}@${version}`,
    greeting,
    zipRequests: () => zipRequests,
    failedZipRequests: () => failed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
