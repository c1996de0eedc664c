import type { AnyZodObject, ZodTypeAny } from 'zod';
import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from '../schemas/zod';
import { errorEnvelopeSchema, plainErrorSchema } from '../schemas/errorSchemas';
import type { DescribedRoute, RouteAccess } from './describedRouter';

/** Security scheme names are part of the contract (19): clients and generated code refer to them. */
export const SECURITY_SCHEMES = {
  secretKey: { type: 'http', scheme: 'bearer', description: 'A project secret key, `sk_…`: server side only.' },
  publicKey: { type: 'http', scheme: 'bearer', description: 'A project public key, `pk_…`: safe in a browser; /v1/track only.' },
  session: {
    type: 'apiKey',
    in: 'cookie',
    name: 'mailroom_session',
    description: 'The dashboard session cookie set by POST /auth/login.',
  },
  projectId: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Project-Id',
    description: 'With the session cookie, the project a key-authenticated route acts on (the user must be a member).',
  },
} as const;

const securityOf: Record<RouteAccess, RouteConfig['security']> = {
  secret: [{ secretKey: [] }, { session: [], projectId: [] }],
  public: [{ publicKey: [] }, { session: [], projectId: [] }],
  session: [{ session: [] }],
  none: [],
};

/** A koa path's parameters: `:id`, and `*path` (the rest of the path, slashes included). */
const PATH_PARAMETER = /[:*]([A-Za-z0-9_]+)/g;

/** `/contacts/:id` → `/contacts/{id}`, `/app/*path` → `/app/{path}`. */
export function openApiPath(koaPath: string): string {
  return koaPath.replace(PATH_PARAMETER, '{$1}');
}

function pathParameters(koaPath: string): AnyZodObject | undefined {
  const names = [...koaPath.matchAll(PATH_PARAMETER)].map((m) => m[1]);
  if (names.length === 0) return undefined;
  return z.object(Object.fromEntries(names.map((name) => [name, z.string()])));
}

function operation(route: DescribedRoute, errorSchema: ZodTypeAny): RouteConfig {
  const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: errorSchema } } });
  const { doc } = route;
  const responses: RouteConfig['responses'] = {};
  for (const [status, response] of Object.entries(doc.responses)) {
    const contentType = response.contentType ?? 'application/json';
    responses[status] = {
      description: response.description,
      // A Header Object needs a schema (or content) to be valid OpenAPI; every header named here is a string.
      ...(response.headers
        ? { headers: Object.fromEntries(Object.entries(response.headers).map(([name, header]) => [name, { ...header, schema: { type: 'string' as const } }])) }
        : {}),
      ...(response.schema || response.contentType
        ? {
            content: {
              [contentType]: {
                schema: response.schema ?? z.string(),
                ...(response.example !== undefined ? { example: response.example } : {}),
              },
            },
          }
        : {}),
    };
  }
  if (doc.plain400) {
    responses['400'] = {
      description: 'A missing or malformed required field (the specification’s plain body), or another bad request (the envelope)',
      content: { 'application/json': { schema: z.union([plainErrorSchema, errorSchema]) } },
    };
  }
  responses['4XX'] ??= errorResponse('The request was refused; `error.code` says why');
  responses['5XX'] ??= errorResponse('The server could not answer (a dependency away, an unexpected error)');
  return {
    method: route.method,
    path: openApiPath(route.path),
    operationId: operationId(route),
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: [doc.tag],
    security: securityOf[doc.access],
    request: {
      ...((doc.params ?? pathParameters(route.path)) ? { params: doc.params ?? pathParameters(route.path) } : {}),
      ...(doc.query ? { query: doc.query } : {}),
      ...(doc.body
        ? {
            body: {
              required: doc.body.required ?? true,
              content: {
                [doc.body.contentType ?? 'application/json']: {
                  schema: doc.body.schema,
                  ...(doc.body.example !== undefined ? { example: doc.body.example } : {}),
                },
              },
            },
          }
        : {}),
    },
    responses,
  };
}

/**
 * `GET /contacts/:id/usage` → `getContactsIdUsage`: stable while the route is, for generated clients.
 * A trailing slash is a word of its own (`GET /app/` → `getAppIndex`, beside `GET /app`), `GET /` is `getRoot`.
 */
function operationId(route: DescribedRoute): string {
  const words = route.path
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1));
  const suffix = route.path === '/' ? 'Root' : route.path.endsWith('/') ? 'Index' : '';
  return route.method + words.join('') + suffix;
}

/** The OpenAPI 3.1 document of the routes given (contract 19), built once at start. */
export function buildApiDocument(routes: DescribedRoute[], version: string) {
  const registry = new OpenAPIRegistry();
  for (const [name, scheme] of Object.entries(SECURITY_SCHEMES)) registry.registerComponent('securitySchemes', name, scheme);
  const errorSchema = registry.register('Error', errorEnvelopeSchema);
  for (const route of routes) registry.registerPath(operation(route, errorSchema));
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Mailroom API',
      version,
      description:
        'Transactional and campaign email, contacts, events, segments, templates and automations for many projects. ' +
        'Errors answer the envelope of the `Error` schema; `X-Request-ID` names each request.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
  });
}

export type ApiDocument = ReturnType<typeof buildApiDocument>;
