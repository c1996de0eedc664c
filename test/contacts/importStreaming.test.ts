import zlib from 'node:zlib';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { eventually } from '../support/eventually';

/**
 * Uploads are read as they stream in (checked, counted and stored a piece at a time) and the
 * import activity reads them back the same way. These cases cross the places where a file is cut:
 * the upload's 256 KB storage chunks, socket reads, a multi-byte character or a quoted line break
 * split between two of them.
 */
let stack: TestStack;
let project: TestProject;
beforeAll(async () => {
  stack = await startTestStack();
  ({ project } = await accountWithProject(stack.http));
});
afterAll(() => stack.stop());

const MAX = 5 * 1024 * 1024;
const k = () => ({ key: project.secretKey });
const importCsv = (content: string | Buffer) => uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, { name: 'contacts.csv', content });
async function finishedJob(jobId: string) {
  return eventually(
    async () => {
      const res = await stack.http.get(`/contacts/import/${jobId}`, k());
      if (!['COMPLETED', 'FAILED', 'CANCELLED'].includes(res.body.status)) throw new Error(`still ${res.body.status} ${res.body.processed}`);
      return res.body;
    },
    120_000,
    100,
  );
}
async function storedCounts() {
  const [row] = await stack.orm.em
    .fork()
    .execute(
      `select (select count(*) from jobs)::int as jobs, (select count(*) from job_uploads)::int as uploads, (select count(*) from job_upload_chunks)::int as chunks`,
    );
  return row;
}
/** Data rows `make(i)` after `header`, as many as fit in `bytes` (UTF-8). */
function csvOfSize(header: string, bytes: number, make: (i: number) => string, eol = '\n') {
  const lines = [header];
  let size = Buffer.byteLength(header + eol);
  for (let i = 0; ; i++) {
    const line = make(i);
    const lineBytes = Buffer.byteLength(line + eol);
    if (size + lineBytes > bytes) break;
    lines.push(line);
    size += lineBytes;
  }
  return { text: lines.join(eol) + eol, rows: lines.length - 1 };
}

describe('streamed CSV import', () => {
  it('answers 202 with the total of a file of many chunks, and imports every row intact', async () => {
    // CRLF endings, a BOM, blank lines, quoted line breaks and commas, and multi-byte characters
    // throughout, so some fall on the chunk and read boundaries.
    const { text, rows } = csvOfSize(
      'email,name,note',
      1_200_000,
      (i) => (i % 500 === 499 ? '' : `stream${i}@example.com,Zoë ✓ ${i},"line one\r\nline, two 🚀"`),
      '\r\n',
    );
    const dataRows = rows - Math.floor(rows / 500);
    const res = await importCsv(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'QUEUED', total: dataRows });

    const job = await finishedJob(res.body.jobId);
    expect(job).toMatchObject({ status: 'COMPLETED', total: dataRows, processed: dataRows, succeeded: dataRows, failed: 0 });
    const lookup = await stack.http.post('/contacts/lookup', { emails: ['stream0@example.com', 'stream7777@example.com'] }, k());
    expect(lookup.body.found).toHaveLength(2);
    for (const { id } of lookup.body.found) {
      const contact = (await stack.http.get(`/contacts/${id}`, k())).body;
      expect(contact.data.name).toMatch(/^Zoë ✓ \d+$/);
      expect(contact.data.note).toBe('line one\r\nline, two 🚀');
    }
    const [{ n }] = await stack.orm.em.fork().execute(`select count(*)::int as n from contacts where project_id = ? and email like 'stream%'`, [project.id]);
    expect(n).toBe(dataRows);
  }, 180_000);

  it('refuses a file that breaks after its first megabytes with 400, and keeps nothing of it', async () => {
    const before = await storedCounts();
    const { text } = csvOfSize('email,n', 2_000_000, (i) => `late${i}@example.com,${i}`);
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.from(text + 'late-x@example.com,"never closed\n'), /could not be read/i],
      [Buffer.from(text + 'late-y@example.com,a"b\n'), /could not be read/i],
      [Buffer.concat([Buffer.from(text), Buffer.from([0x61, 0xff, 0x0a])]), /not UTF-8/],
      // A multi-byte character cut off at the very end.
      [Buffer.concat([Buffer.from(text + 'late-z@example.com,'), Buffer.from([0xe2, 0x9c])]), /not UTF-8/],
    ];
    for (const [content, message] of cases) {
      const res = await importCsv(content);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(message);
    }
    expect(await storedCounts()).toEqual(before);
  });

  it('accepts exactly 5 MB and refuses one byte more with 413, storing nothing', async () => {
    // Rows without a valid email: the import only records their errors, so it finishes fast.
    const header = 'email,padding';
    const { text, rows } = csvOfSize(header, MAX - 200, (i) => `nobody-${i},${'x'.repeat(40)}`);
    const fill = MAX - Buffer.byteLength(text) - 1;
    const atLimit = Buffer.from(text + `nobody-last,${'y'.repeat(fill - 'nobody-last,'.length)}\n`);
    expect(atLimit.length).toBe(MAX);

    const before = await storedCounts();
    const over = await importCsv(Buffer.concat([atLimit, Buffer.from('\n')]));
    expect(over.status).toBe(413);
    expect(over.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await storedCounts()).toEqual(before);

    const ok = await importCsv(atLimit);
    expect(ok.status).toBe(202);
    expect(ok.body.total).toBe(rows + 1);
    const job = await finishedJob(ok.body.jobId);
    expect(job).toMatchObject({ status: 'COMPLETED', processed: rows + 1, succeeded: 0, failed: rows + 1 });
    expect(job.errors).toHaveLength(100);
  }, 120_000);

  it("turns a row holding a NUL character into that row's error, importing the rows beside it", async () => {
    const csv = ['email,name', 'nul-ok1@example.com,One', 'nul-bad@example.com,"a\u0000b"', 'nul\u0000mail@example.com,Two', 'nul-ok2@example.com,Three'].join(
      '\n',
    );
    const res = await importCsv(csv);
    expect(res.status).toBe(202);
    expect(res.body.total).toBe(4);
    const job = await finishedJob(res.body.jobId);
    expect(job).toMatchObject({ status: 'COMPLETED', processed: 4, succeeded: 2, failed: 2 });
    expect(job.errors).toEqual([
      { row: 3, email: 'nul-bad@example.com', error: 'The row contains a NUL character, which cannot be stored' },
      { row: 4, error: 'The row contains a NUL character, which cannot be stored' },
    ]);
    const lookup = await stack.http.post('/contacts/lookup', { emails: ['nul-ok1@example.com', 'nul-ok2@example.com', 'nul-bad@example.com'] }, k());
    expect(lookup.body.found.map((c: { email: string }) => c.email).sort()).toEqual(['nul-ok1@example.com', 'nul-ok2@example.com']);

    // In the header row it is a broken file (a UTF-16 file read as UTF-8 looks like this).
    const before = await storedCounts();
    const header = await importCsv('e\u0000m\u0000a\u0000i\u0000l\u0000\nx@example.com\n');
    expect(header.status).toBe(400);
    expect(header.body.error.message).toMatch(/NUL/);
    expect(await storedCounts()).toEqual(before);
  });
});

describe('encoded uploads (Content-Encoding)', () => {
  /** The multipart body a browser would send for `csv`, then encoded as `encode` says. */
  async function encodedUpload(csv: string | Buffer, encoding: string, encode: (raw: Buffer) => Buffer) {
    const form = new FormData();
    form.append('file', new Blob([typeof csv === 'string' ? Buffer.from(csv) : csv], { type: 'text/csv' }), 'contacts.csv');
    const framed = new Request('http://mailroom.test/', { method: 'POST', body: form });
    const raw = Buffer.from(await framed.arrayBuffer());
    const res = await fetch(stack.http.baseUrl + '/contacts/import', {
      method: 'POST',
      headers: { Authorization: `Bearer ${project.secretKey}`, 'Content-Type': framed.headers.get('content-type')!, 'Content-Encoding': encoding },
      body: encode(raw),
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  it('decodes gzip, deflate and br uploads and imports them', async () => {
    for (const [encoding, encode] of [
      ['gzip', zlib.gzipSync],
      ['deflate', zlib.deflateSync],
      ['br', zlib.brotliCompressSync],
    ] as const) {
      const csv = `email,plan\n${encoding}-1@example.com,pro\n${encoding}-2@example.com,free\n`;
      const res = await encodedUpload(csv, encoding, (raw) => encode(raw));
      expect({ encoding, status: res.status, total: res.body.total }).toEqual({ encoding, status: 202, total: 2 });
      expect(await finishedJob(res.body.jobId)).toMatchObject({ status: 'COMPLETED', succeeded: 2, failed: 0 });
    }
  });

  it('refuses bytes that do not decode (400), a bomb past the limit after decoding (413) and an unknown encoding (415), storing nothing', async () => {
    const before = await storedCounts();
    const corrupt = await encodedUpload('email\na@example.com\n', 'gzip', (raw) => raw);
    expect(corrupt.status).toBe(400);
    // 50 MB of rows that gzip to well under 1 MB on the wire.
    const bomb = await encodedUpload(Buffer.concat([Buffer.from('email\n'), Buffer.alloc(50 * 1024 * 1024, 'a@example.com\n')]), 'gzip', (raw) =>
      zlib.gzipSync(raw),
    );
    expect(bomb.status).toBe(413);
    const unknown = await encodedUpload('email\na@example.com\n', 'compress', (raw) => raw);
    expect(unknown.status).toBe(415);
    expect(await storedCounts()).toEqual(before);
  });
});
