import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * Checks responses against the API description the server itself serves (GET /openapi.json,
 * contract 19): every response a test receives through HttpClient must have a documented status,
 * a documented content type and, when JSON, a body its schema accepts. A mismatch fails the test.
 */

interface MediaType {
  schema?: unknown;
}
interface ResponseObject {
  content?: Record<string, MediaType>;
}
interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  literalLength: number;
  paramCount: number;
  responses: Record<string, ResponseObject>;
}
interface ApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
}

/** A response that does not fit the API description: a failure to report at once, never to retry (test/support/eventually.ts). */
export class ApiDescriptionMismatch extends Error {
  constructor(problem: string) {
    super(`The response does not match the API description (GET /openapi.json): ${problem}`);
    this.name = 'ApiDescriptionMismatch';
  }
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'options'];

export class ResponseChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  private readonly operations: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(document: ApiDocument) {
    addFormats(this.ajv);
    // RFC 3339 as the API writes it (Date#toISOString): ajv-formats also takes "2026-11-27 16:44:40.228+00",
    // PostgreSQL's text form, which is exactly the mistake to catch.
    this.ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)$/);
    this.ajv.addSchema(document, 'openapi');
    for (const [template, item] of Object.entries(document.paths)) {
      const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        this.operations.push({
          method,
          template,
          pattern: new RegExp(`^${source}$`),
          literalLength: template.replace(/\{[^}]+\}/g, '').length,
          paramCount: (template.match(/\{/g) ?? []).length,
          responses: op.responses,
        });
      }
    }
    // A literal segment wins over a parameter (/contacts/fields before /contacts/{id}), as the router has it.
    this.operations.sort((a, b) => a.paramCount - b.paramCount || b.literalLength - a.literalLength);
  }

  /** The operation serving `method path`, if the description has one. */
  operation(method: string, path: string): Operation | undefined {
    const pathname = path.split('?')[0].split('#')[0];
    return this.operations.find((op) => op.method === method.toLowerCase() && op.pattern.test(pathname));
  }

  /** Why a response does not fit the description, or null when it does. */
  problem(method: string, path: string, status: number, contentType: string | null, body: unknown, text: string): string | null {
    const op = this.operation(method, path);
    // Undescribed routes are test/platform/apiDescription.test.ts's to report; a path no route serves answers 404.
    if (!op) return null;
    const key = String(status);
    const rangeKey = `${key[0]}XX`;
    const responseKey = op.responses[key] ? key : op.responses[rangeKey] ? rangeKey : op.responses.default ? 'default' : undefined;
    if (!responseKey) return `${method} ${op.template} answered ${status}, which its description does not list (${Object.keys(op.responses).join(', ')})`;
    const content = op.responses[responseKey].content;
    if (!content || text === '') return null;
    const mediaType = (contentType ?? '').split(';')[0].trim().toLowerCase();
    const documented = Object.keys(content);
    const match = documented.find((t) => t === mediaType || t === '*/*' || (t.endsWith('/*') && mediaType.startsWith(t.slice(0, -1))));
    if (!match) return `${method} ${op.template} ${status} answered ${mediaType || 'no content type'}; its description lists ${documented.join(', ')}`;
    if (match !== 'application/json' || content[match].schema === undefined) return null;
    const validate = this.validator(op, responseKey);
    if (validate(body)) return null;
    const errors = (validate.errors ?? [])
      .slice(0, 5)
      .map((e) => `${e.instancePath || '(body)'} ${e.message ?? ''} ${e.params ? JSON.stringify(e.params) : ''}`)
      .join('; ');
    return `${method} ${op.template} ${status}: the body does not fit its described schema: ${errors}\nbody: ${text.slice(0, 600)}`;
  }

  private validator(op: Operation, responseKey: string): ValidateFunction {
    const pointer = ['paths', op.template, op.method, 'responses', responseKey, 'content', 'application/json', 'schema']
      .map((part) => encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1')))
      .join('/');
    const ref = `openapi#/${pointer}`;
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: ref });
      this.validators.set(ref, validate);
    }
    return validate;
  }
}

const checkers = new Map<string, Promise<ResponseChecker | null | 'unreachable'>>();

/**
 * The checker for the API at `baseUrl`, from the description it serves; null when it serves none
 * (a test server that is not Mailroom's API, or one not up yet: asked again next time).
 */
export async function responseCheckerFor(baseUrl: string): Promise<ResponseChecker | null> {
  let found = checkers.get(baseUrl);
  if (!found) {
    found = loadChecker(baseUrl);
    checkers.set(baseUrl, found);
  }
  const checker = await found;
  if (checker === 'unreachable') {
    checkers.delete(baseUrl);
    return null;
  }
  return checker;
}

async function loadChecker(baseUrl: string): Promise<ResponseChecker | null | 'unreachable'> {
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/openapi.json`, { signal: AbortSignal.timeout(5_000) });
  } catch {
    return 'unreachable';
  }
  if (res.status !== 200) return null;
  const document = (await res.json()) as ApiDocument;
  return typeof document.openapi === 'string' && document.paths ? new ResponseChecker(document) : null;
}
