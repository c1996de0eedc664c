import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import sharp from 'sharp';
import S3rver from 's3rver';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startTestStack, type TestStack } from '../support/testStack';
import { ConfigError, loadConfig } from '../../lib/config';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';

/**
 * POST /uploads/image and GET /uploads/<id>.<ext> over real HTTP: every accepted format made by
 * a real encoder (sharp), every refused kind (nothing stored for any), the serving headers, local
 * storage under DATA_DIR/uploads, and an S3 bucket on a real S3-speaking server (s3rver).
 */

type Format = 'png' | 'jpeg' | 'gif' | 'webp';
const EXTENSIONS: Record<Format, string> = { png: 'png', jpeg: 'jpg', gif: 'gif', webp: 'webp' };

async function makeImage(format: Format, width = 7, height = 5): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 90 } } })
    .toFormat(format)
    .toBuffer();
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(Buffer.concat([Buffer.from(type, 'latin1'), data])));
  return Buffer.concat([length, Buffer.from(type, 'latin1'), data, crc]);
}

/** A well-formed PNG declaring width × height whose IDAT is a few KB of deflated zeros: tiny on the wire, gigabytes decoded. */
function pngDeclaring(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, deflate, no filter method, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', zlib.deflateSync(Buffer.alloc(4 * 1024 * 1024))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

const upload = (stack: TestStack, key: string, content: Buffer | string, name = 'image.bin', type = 'application/octet-stream', field = 'file') =>
  uploadFile(stack.http.baseUrl, '/uploads/image', key, { field, name, content, type });

async function postForm(stack: TestStack, key: string, form: FormData) {
  const res = await fetch(`${stack.http.baseUrl}/uploads/image`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  return { status: res.status, body: (await res.json()) as any };
}

/** Every file under dir, temporary ones included (a refused upload must leave none). */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

async function uploadRows(stack: TestStack): Promise<number> {
  const [row] = await stack.orm.em.fork().execute(`select count(*)::int as n from uploads`);
  return row.n;
}

function expectRefused(res: { status: number; body: any }, code: string) {
  expect(res.status).toBe(400);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.statusCode).toBe(400);
  expect(typeof res.body.error.message).toBe('string');
}

describe('uploads on local storage', () => {
  let stack: TestStack;
  let account: TestAccount;
  let project: TestProject;
  let uploadsDir: string;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    ({ account, project } = await accountWithProject(stack.http));
    uploadsDir = path.join(stack.config.dataDir, 'uploads');
  });
  afterAll(() => stack.stop());

  /** Runs a refused upload and checks that it stored nothing: no row, no file, no temporary file. */
  async function expectRefusedWithNothingStored(send: () => Promise<{ status: number; body: any }>, code: string) {
    const rowsBefore = await uploadRows(stack);
    const filesBefore = filesUnder(uploadsDir);
    const res = await send();
    expectRefused(res, code);
    expect(await uploadRows(stack)).toBe(rowsBefore);
    expect(filesUnder(uploadsDir)).toEqual(filesBefore);
    return res;
  }

  it.each(['png', 'jpeg', 'gif', 'webp'] as Format[])('accepts a %s recognised by its bytes, whatever its name says, and serves it', async (format) => {
    const bytes = await makeImage(format, 7, 5);
    // Name and declared type lie on purpose: only the content counts.
    const res = await upload(stack, project.secretKey, bytes, 'holiday.txt', 'text/plain');
    expect(res.status).toBe(201);
    const ext = EXTENSIONS[format];
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: `http://mailroom.test/uploads/${res.body.id}.${ext}`,
      contentType: `image/${format}`,
      size: bytes.length,
      width: 7,
      height: 5,
    });

    const file = path.join(uploadsDir, project.id, `${res.body.id}.${ext}`);
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);

    const served = await fetch(`${stack.http.baseUrl}/uploads/${res.body.id}.${ext}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe(`image/${format}`);
    expect(served.headers.get('content-length')).toBe(String(bytes.length));
    expect(served.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.headers.get('etag')).toBe(`"${res.body.id}"`);
    expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('writes files atomically: no temporary file is left beside the stored ones', async () => {
    await Promise.all([1, 2, 3, 4].map(async (n) => expect((await upload(stack, project.secretKey, await makeImage('png', n, n))).status).toBe(201)));
    const names = filesUnder(uploadsDir).map((f) => path.basename(f));
    expect(names.filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect(names.length).toBe(await uploadRows(stack));
  });

  it('reports the displayed size of a JPEG that EXIF turns a quarter', async () => {
    const bytes = await sharp({ create: { width: 12, height: 4, channels: 3, background: '#000' } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const res = await upload(stack, project.secretKey, bytes, 'turned.jpg', 'image/jpeg');
    expect(res.status).toBe(201);
    expect({ width: res.body.width, height: res.body.height }).toEqual({ width: 4, height: 12 });
  });

  it('refuses a text file renamed to .png', async () => {
    await expectRefusedWithNothingStored(
      () => upload(stack, project.secretKey, 'just some text, honestly\n'.repeat(50), 'photo.png', 'image/png'),
      'UNSUPPORTED_IMAGE_TYPE',
    );
  });

  it('refuses an HTML page posing as a JPEG, and a PDF', async () => {
    await expectRefusedWithNothingStored(
      () => upload(stack, project.secretKey, '<!doctype html><html><script>alert(1)</script></html>', 'a.jpg', 'image/jpeg'),
      'UNSUPPORTED_IMAGE_TYPE',
    );
    const res = await expectRefusedWithNothingStored(
      () => upload(stack, project.secretKey, '%PDF-1.7\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n', 'a.png', 'image/png'),
      'UNSUPPORTED_IMAGE_TYPE',
    );
    expect(res.body.error.message).toMatch(/pdf/i);
  });

  it('refuses SVG, with or without an XML declaration', async () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(document.cookie)</script></svg>';
    const res = await expectRefusedWithNothingStored(() => upload(stack, project.secretKey, svg, 'logo.svg', 'image/svg+xml'), 'SVG_NOT_ALLOWED');
    expect(res.body.error.message).toMatch(/script/);
    await expectRefusedWithNothingStored(
      () => upload(stack, project.secretKey, `<?xml version="1.0" encoding="UTF-8"?>\n${svg}`, 'logo.png', 'image/png'),
      'SVG_NOT_ALLOWED',
    );
  });

  it('refuses a file that only starts like an image', async () => {
    const truncated = (await makeImage('png')).subarray(0, 20);
    await expectRefusedWithNothingStored(() => upload(stack, project.secretKey, truncated, 'cut.png', 'image/png'), 'INVALID_IMAGE');
    await expectRefusedWithNothingStored(() => upload(stack, project.secretKey, Buffer.from('GIF89a'), 'cut.gif', 'image/gif'), 'INVALID_IMAGE');
  });

  it('refuses a decompression bomb: a small PNG declaring 100,000 × 100,000 pixels', async () => {
    const bomb = pngDeclaring(100_000, 100_000);
    expect(bomb.length).toBeLessThan(100 * 1024);
    const res = await expectRefusedWithNothingStored(() => upload(stack, project.secretKey, bomb, 'bomb.png', 'image/png'), 'IMAGE_DIMENSIONS_TOO_LARGE');
    expect(res.body.error.message).toContain('100000 × 100000');
  });

  it('applies both the side limit (10,000 px) and the pixel limit (25 megapixels)', async () => {
    await expectRefusedWithNothingStored(() => upload(stack, project.secretKey, pngDeclaring(10_001, 10), 'wide.png'), 'IMAGE_DIMENSIONS_TOO_LARGE');
    await expectRefusedWithNothingStored(() => upload(stack, project.secretKey, pngDeclaring(6000, 6000), 'big.png'), 'IMAGE_DIMENSIONS_TOO_LARGE');
    const atTheLimit = await upload(stack, project.secretKey, pngDeclaring(10_000, 2500), 'limit.png');
    expect(atTheLimit.status).toBe(201);
    expect({ width: atTheLimit.body.width, height: atTheLimit.body.height }).toEqual({ width: 10_000, height: 2500 });
  });

  it('refuses a 6 MB file, announced by Content-Length or streamed without one', async () => {
    const sixMb = Buffer.concat([await makeImage('png'), Buffer.alloc(6 * 1024 * 1024)]);
    await expectRefusedWithNothingStored(() => upload(stack, project.secretKey, sixMb, 'huge.png', 'image/png'), 'FILE_TOO_LARGE');

    // Chunked: the server only learns the size by reading, and stops one byte past 5 MB.
    const boundary = 'mailroom-test-boundary';
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="huge.png"\r\nContent-Type: image/png\r\n\r\n`);
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const pieces = [head, ...Array.from({ length: 96 }, (_, i) => sixMb.subarray(i * 65536, (i + 1) * 65536)), tail];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = pieces.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    await expectRefusedWithNothingStored(async () => {
      const res = await fetch(`${stack.http.baseUrl}/uploads/image`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${project.secretKey}`, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
        body,
        duplex: 'half',
      });
      return { status: res.status, body: await res.json() };
    }, 'FILE_TOO_LARGE');
  });

  it('accepts an image of exactly 5 MB', async () => {
    const image = await makeImage('png');
    // Bytes after IEND are ignored by decoders; the file is still a valid PNG of 5 MB.
    const fiveMb = Buffer.concat([image, Buffer.alloc(5 * 1024 * 1024 - image.length)]);
    const res = await upload(stack, project.secretKey, fiveMb, 'five.png', 'image/png');
    expect(res.status).toBe(201);
    expect(res.body.size).toBe(5 * 1024 * 1024);
  });

  it('refuses an empty file', async () => {
    await expectRefusedWithNothingStored(() => upload(stack, project.secretKey, Buffer.alloc(0), 'empty.png', 'image/png'), 'EMPTY_FILE');
  });

  it('refuses a file in another field, a form without a file, two files, and a body that is not a form', async () => {
    const png = await makeImage('png');
    let res = await expectRefusedWithNothingStored(() => upload(stack, project.secretKey, png, 'a.png', 'image/png', 'image'), 'BAD_REQUEST');
    expect(res.body.error.message).toContain('"file"');

    const noFile = new FormData();
    noFile.append('file', 'not a file, a text field');
    res = await expectRefusedWithNothingStored(() => postForm(stack, project.secretKey, noFile), 'BAD_REQUEST');
    expect(res.body.error.message).toContain('"file"');

    const two = new FormData();
    two.append('file', new Blob([png], { type: 'image/png' }), 'one.png');
    two.append('file', new Blob([await makeImage('gif')], { type: 'image/gif' }), 'two.gif');
    await expectRefusedWithNothingStored(() => postForm(stack, project.secretKey, two), 'TOO_MANY_FILES');

    const otherField = new FormData();
    otherField.append('file', new Blob([png], { type: 'image/png' }), 'one.png');
    otherField.append('extra', new Blob([png], { type: 'image/png' }), 'two.png');
    await expectRefusedWithNothingStored(() => postForm(stack, project.secretKey, otherField), 'TOO_MANY_FILES');

    await expectRefusedWithNothingStored(async () => {
      const r = await stack.http.post('/uploads/image', { file: png.toString('base64') }, { key: project.secretKey });
      return { status: r.status, body: r.body };
    }, 'BAD_REQUEST');
  });

  it('needs the secret key', async () => {
    const png = await makeImage('png');
    const withPublic = await upload(stack, project.publicKey, png, 'a.png', 'image/png');
    expect(withPublic.status).toBe(401);
    expect(withPublic.body.error.code).toBe('INVALID_API_KEY');
    const res = await fetch(`${stack.http.baseUrl}/uploads/image`, { method: 'POST', body: new FormData() });
    expect(res.status).toBe(401);
  });

  it('serves without auth: 304 on a matching ETag, HEAD without a body, 404 for unknown ids and wrong extensions', async () => {
    const bytes = await makeImage('webp');
    const { body } = await upload(stack, project.secretKey, bytes, 'a.webp', 'image/webp');
    const url = `${stack.http.baseUrl}/uploads/${body.id}.webp`;

    const revalidated = await fetch(url, { headers: { 'If-None-Match': `"${body.id}"` } });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');

    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(bytes.length));
    expect(head.headers.get('content-type')).toBe('image/webp');

    for (const name of [
      `${body.id}.png`,
      `${body.id}`,
      '00000000-0000-4000-8000-000000000000.webp',
      'nothing.png',
      '..%2F..%2Fsecret',
      `${body.id.toUpperCase()}.webp`,
    ]) {
      const res = await stack.http.get(`/uploads/${name}`);
      expect([name, res.status]).toEqual([name, 404]);
    }
    const missing = await stack.http.get('/uploads/00000000-0000-4000-8000-000000000000.png');
    expect(missing.body.error.code).toBe('RESOURCE_NOT_FOUND');
  });

  it('reports objectStorage disabled in GET /config', async () => {
    const res = await stack.http.get('/config');
    expect(res.body.objectStorage).toBe(false);
  });

  it('keeps uploads through a project reset (templates link to them) and removes them with the project', async () => {
    const { body } = await upload(stack, project.secretKey, await makeImage('gif'), 'a.gif', 'image/gif');
    const file = path.join(uploadsDir, project.id, `${body.id}.gif`);

    const reset = await stack.http.post(`/users/@me/projects/${project.id}/reset`, undefined, { cookie: account.cookie });
    expect(reset.status).toBe(200);
    expect((await stack.http.get(`/uploads/${body.id}.gif`)).status).toBe(200);

    const deleted = await stack.http.delete(`/users/@me/projects/${project.id}`, { cookie: account.cookie });
    expect(deleted.status).toBe(204);
    expect((await stack.http.get(`/uploads/${body.id}.gif`)).status).toBe(404);
    expect(fs.existsSync(file)).toBe(false);
    expect(filesUnder(path.join(uploadsDir, project.id))).toEqual([]);
  });
});

describe('uploads in an S3-compatible store', () => {
  const bucket = 'mailroom-uploads';
  let s3Dir: string;
  let s3Server: S3rver;
  let s3Endpoint: string;
  let s3: S3Client;
  let stack: TestStack;
  let account: TestAccount;
  let project: TestProject;
  beforeAll(async () => {
    s3Dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-s3-'));
    // s3rver's default account; it refuses unknown access key ids.
    s3Server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3Dir, configureBuckets: [{ name: bucket, configs: [] }] });
    const { port } = await s3Server.run();
    s3Endpoint = `http://127.0.0.1:${port}`;
    s3 = new S3Client({ endpoint: s3Endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    stack = await startTestStack({ worker: false, env: { S3_URL: `http://S3RVER:S3RVER@127.0.0.1:${port}/${bucket}/images` } });
    ({ account, project } = await accountWithProject(stack.http));
  });
  afterAll(async () => {
    await stack?.stop();
    s3?.destroy();
    await s3Server?.close().catch(() => undefined);
    fs.rmSync(s3Dir, { recursive: true, force: true });
  });

  const objectBytes = async (key: string) => {
    try {
      const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return { bytes: Buffer.from(await res.Body!.transformToByteArray()), contentType: res.ContentType };
    } catch (err) {
      if ((err as Error).name === 'NoSuchKey') return null;
      throw err;
    }
  };

  it('reports objectStorage enabled in GET /config', async () => {
    expect((await stack.http.get('/config')).body.objectStorage).toBe(true);
  });

  it.each(['png', 'jpeg', 'gif', 'webp'] as Format[])('stores a %s in the bucket (under the key prefix) and serves it through Mailroom', async (format) => {
    const bytes = await makeImage(format, 3, 9);
    const res = await upload(stack, project.secretKey, bytes, 'x.bin');
    expect(res.status).toBe(201);
    const ext = EXTENSIONS[format];
    expect(res.body).toMatchObject({
      url: `http://mailroom.test/uploads/${res.body.id}.${ext}`,
      contentType: `image/${format}`,
      width: 3,
      height: 9,
      size: bytes.length,
    });

    const stored = await objectBytes(`images/${project.id}/${res.body.id}.${ext}`);
    expect(stored?.bytes.equals(bytes)).toBe(true);
    expect(stored?.contentType).toBe(`image/${format}`);
    // Nothing under DATA_DIR/uploads: the bucket is the only place.
    expect(filesUnder(path.join(stack.config.dataDir, 'uploads'))).toEqual([]);

    const served = await fetch(`${stack.http.baseUrl}/uploads/${res.body.id}.${ext}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe(`image/${format}`);
    expect(served.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.headers.get('etag')).toBe(`"${res.body.id}"`);
    expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('stores nothing in the bucket for a refused file', async () => {
    const before = await uploadRows(stack);
    const refused = await upload(stack, project.secretKey, pngDeclaring(100_000, 100_000), 'bomb.png', 'image/png');
    expectRefused(refused, 'IMAGE_DIMENSIONS_TOO_LARGE');
    expect(await uploadRows(stack)).toBe(before);
    expect(fs.readdirSync(s3Dir, { recursive: true }).filter((n) => String(n).includes('bomb'))).toEqual([]);
  });

  it('removes the objects when the project is deleted', async () => {
    const { body } = await upload(stack, project.secretKey, await makeImage('png'), 'a.png');
    const key = `images/${project.id}/${body.id}.png`;
    expect(await objectBytes(key)).not.toBeNull();
    expect((await stack.http.delete(`/users/@me/projects/${project.id}`, { cookie: account.cookie })).status).toBe(204);
    expect(await objectBytes(key)).toBeNull();
    expect((await stack.http.get(`/uploads/${body.id}.png`)).status).toBe(404);
  });

  it('answers 503 and records nothing when the store refuses the file', async () => {
    // An access key the store does not know (s3rver checks the key id; it does not recompute SigV4 signatures).
    const other = await startTestStack({ worker: false, env: { S3_URL: `${s3Endpoint.replace('http://', 'http://UNKNOWN:S3RVER@')}/${bucket}` } });
    try {
      const { project: p } = await accountWithProject(other.http);
      const res = await upload(other, p.secretKey, await makeImage('png'), 'a.png');
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('OBJECT_STORAGE_UNAVAILABLE');
      expect(await uploadRows(other)).toBe(0);
    } finally {
      await other.stop();
    }
  });
});

describe('S3 settings', () => {
  const env = (vars: Record<string, string>) => loadConfig({ DATA_DIR: os.tmpdir(), SECRET: 'x'.repeat(32), ...vars });

  it('reads an S3-compatible endpoint from S3_URL, path-style, with the key prefix and percent-decoded credentials', () => {
    expect(env({ S3_URL: 'https://AKID:se%2Fcret@minio.internal:9000/mail-images/prod/uploads?region=eu-west-1' }).s3).toEqual({
      endpoint: 'https://minio.internal:9000',
      bucket: 'mail-images',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'se/cret' },
      forcePathStyle: true,
      keyPrefix: 'prod/uploads/',
    });
  });

  it('reads AWS S3 itself from s3://bucket, leaving credentials to the SDK chain', () => {
    expect(env({ S3_URL: 's3://mail-images?region=eu-central-1' }).s3).toEqual({
      endpoint: undefined,
      bucket: 'mail-images',
      region: 'eu-central-1',
      credentials: undefined,
      forcePathStyle: false,
      keyPrefix: '',
    });
  });

  it('reads the separate variables', () => {
    expect(
      env({ S3_BUCKET: 'mail-images', S3_ENDPOINT: 'http://127.0.0.1:9000', S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 'b', S3_FORCE_PATH_STYLE: 'false' })
        .s3,
    ).toEqual({
      endpoint: 'http://127.0.0.1:9000',
      bucket: 'mail-images',
      region: 'us-east-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      forcePathStyle: false,
      keyPrefix: '',
    });
    expect(env({}).s3).toBeNull();
  });

  it.each([
    [{ S3_URL: 's3://mail-images', S3_BUCKET: 'other-bucket' }, /not both/],
    [{ S3_ENDPOINT: 'http://127.0.0.1:9000' }, /S3_BUCKET must be set/],
    [{ S3_BUCKET: 'mail-images', S3_ACCESS_KEY_ID: 'a' }, /go together/],
    [{ S3_URL: 'https://minio.internal:9000/' }, /name the bucket/],
    [{ S3_URL: 'ftp://host/bucket' }, /scheme/],
    [{ S3_URL: 'https://minio.internal/Bad_Bucket' }, /not a valid bucket name/],
    [{ S3_URL: 'https://key@minio.internal/bucket' }, /both the access key id and the secret/],
    [{ S3_URL: 'https://minio.internal/bucket?forcePathStyle=maybe' }, /forcePathStyle/],
  ])('refuses to start with %j', (vars, problem) => {
    expect(() => env(vars)).toThrow(ConfigError);
    expect(() => env(vars)).toThrow(problem);
  });
});
