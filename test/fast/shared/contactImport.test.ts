import { checkCsvHeader, importMapping, previewCsv, subscribedCell, typedCell } from '../../../shared/contactImport';

// The CSV import's column rules (shared/contactImport.ts): what the dashboard's preview shows
// before an upload is what the API's import does with the file.

describe('previewCsv', () => {
  test('reads the header and the first rows: a BOM, CRLF, quotes with "" inside, commas and line breaks in quotes, cells trimmed outside quotes', () => {
    const text =
      '\uFEFFemail, First name ,note\r\n ada@example.com ,Ada,"Says ""hi"", often"\r\n\r\nbob@example.com,Bob,"two\nlines"\r\ncy@example.com,,"  kept  "\r\n';
    const preview = previewCsv(text, 10);
    expect(preview.header).toEqual(['email', 'First name', 'note']);
    expect(preview.rows).toEqual([
      ['ada@example.com', 'Ada', 'Says "hi", often'],
      ['bob@example.com', 'Bob', 'two\nlines'],
      ['cy@example.com', '', '  kept  '],
    ]);
    expect(preview.more).toBe(false);
    expect(preview.error).toBeUndefined();
  });

  test('stops after maxRows and says there is more; a last line without a line break counts', () => {
    const text = ['email', 'a@example.com', 'b@example.com', 'c@example.com'].join('\n');
    expect(previewCsv(text, 2)).toEqual({ header: ['email'], rows: [['a@example.com'], ['b@example.com']], more: true });
    expect(previewCsv(text, 3)).toEqual({ header: ['email'], rows: [['a@example.com'], ['b@example.com'], ['c@example.com']], more: false });
  });

  test('the beginning of a big file: a record cut at the end is left out, and an open quote there is no error', () => {
    const beginning = 'email,note\na@example.com,one\nb@example.com,"cut in the mid';
    expect(previewCsv(beginning, 10, false)).toEqual({ header: ['email', 'note'], rows: [['a@example.com', 'one']], more: true });
    expect(previewCsv(beginning, 10, true).error).toBe('A quoted cell is never closed');
  });

  test('an empty file has no header', () => {
    expect(previewCsv('', 5)).toEqual({ header: [], rows: [], more: false });
    expect(previewCsv('\n\n', 5)).toEqual({ header: [], rows: [], more: false });
  });
});

describe('the header rules', () => {
  test('email and subscribed are found whatever their letter case', () => {
    expect(checkCsvHeader(['Name', 'EMAIL', 'Subscribed'])).toEqual({
      header: { columns: ['Name', 'EMAIL', 'Subscribed'], emailIndex: 1, subscribedIndex: 2 },
    });
  });

  test.each([
    [['name', 'plan'], 'The CSV has no "email" column in its header row'],
    [['email', ''], 'Every column of the header row needs a name'],
    [['email', 'Plan', 'plan'], 'The column "plan" appears twice in the header row'],
    [['email', 'x'.repeat(101)], `Column names are at most 100 characters: "${'x'.repeat(40)}…"`],
    [['e\u0000m'], 'The header row contains NUL characters; save the file as UTF-8 CSV (not UTF-16)'],
  ])('%j is refused', (row, error) => {
    expect(checkCsvHeader(row)).toEqual({ error });
    expect(importMapping(row, [])).toEqual({ columns: [], error });
  });
});

describe('importMapping', () => {
  test('each column maps to the address, the subscription, a data key, or nothing (a reserved key), with its cells typed as stored', () => {
    const { header, rows } = previewCsv(
      [
        'Email,subscribed,plan,seats,zip,trial,signedUp,id,unsubscribeUrl',
        'ada@example.com,yes,pro,12,02134,true,2026-11-02,7,x',
        'bob@example.com,no,free,3,10001,false,2026-11-03T10:00:00Z,8,y',
      ].join('\n'),
      5,
    );
    const mapping = importMapping(header, rows);
    expect(mapping.error).toBeUndefined();
    expect(mapping.columns.map((c) => [c.header, c.target, c.type])).toEqual([
      ['Email', { kind: 'email' }, 'text'],
      ['subscribed', { kind: 'subscribed' }, 'text'],
      ['plan', { kind: 'data', key: 'plan' }, 'text'],
      ['seats', { kind: 'data', key: 'seats' }, 'number'],
      // A leading zero keeps a postcode as text in one row, so the column is text.
      ['zip', { kind: 'data', key: 'zip' }, 'text'],
      ['trial', { kind: 'data', key: 'trial' }, 'boolean'],
      ['signedUp', { kind: 'data', key: 'signedUp' }, 'date'],
      ['id', { kind: 'ignored', key: 'id', reason: '"id" is reserved by Mailroom' }, 'text'],
      ['unsubscribeUrl', { kind: 'ignored', key: 'unsubscribeUrl', reason: '"unsubscribeUrl" is reserved by Mailroom' }, 'text'],
    ]);
    expect(mapping.columns[2].samples).toEqual(['pro', 'free']);
    expect(mapping.columns.every((c) => c.problems.length === 0)).toBe(true);
  });

  test('previewed cells the import would refuse are named with their row (the header is row 1); empty cells are no samples', () => {
    const mapping = importMapping(
      ['email', 'subscribed', 'plan'],
      [
        ['not-an-address', 'maybe', ''],
        ['', '', ''],
        ['ok@example.com', 'Y', 'pro'],
      ],
    );
    expect(mapping.columns[0].problems).toEqual([
      { row: 2, message: 'Invalid email address' },
      { row: 3, message: 'Missing email' },
    ]);
    expect(mapping.columns[1].problems).toEqual([{ row: 2, message: 'subscribed must be true/false/1/0/yes/no, not "maybe"' }]);
    expect(mapping.columns[2].samples).toEqual(['pro']);
  });
});

test('cells are typed and subscribed values read as the import stores them', () => {
  expect(typedCell('42')).toBe(42);
  expect(typedCell('-3.5')).toBe(-3.5);
  expect(typedCell('007')).toBe('007');
  expect(typedCell('1234567890123456')).toBe('1234567890123456');
  expect(typedCell('TRUE')).toBe(true);
  expect(typedCell('2026-11-02')).toBe('2026-11-02T00:00:00.000Z');
  expect(typedCell('2026-13-45')).toBe('2026-13-45');
  expect(typedCell('pro')).toBe('pro');
  expect([subscribedCell('Yes'), subscribedCell('0'), subscribedCell(''), subscribedCell(undefined), subscribedCell('sure')]).toEqual([
    true,
    false,
    undefined,
    undefined,
    'invalid',
  ]);
});
