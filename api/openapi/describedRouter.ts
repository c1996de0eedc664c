import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { AnyZodObject, ZodTypeAny } from 'zod';
import type { AppState } from '../state';

/**
 * Who may call a route, as the API description's security requirements:
 * - `secret`: `Authorization: Bearer sk_…`, or a dashboard session cookie plus `X-Project-Id`;
 * - `public`: `Authorization: Bearer pk_…`, or a session plus `X-Project-Id`;
 * - `session`: the dashboard session cookie alone (account and project management);
 * - `none`: anyone (health, the reference, tracking links, signed provider callbacks).
 */
export type RouteAccess = 'secret' | 'public' | 'session' | 'none';

export interface ResponseDoc {
  description: string;
  /** The JSON body's schema; absent for an empty body (204, a redirect). */
  schema?: ZodTypeAny;
  /** When the body is not JSON (an HTML page, raw mail, a pixel); its schema is then omitted. */
  contentType?: string;
  /** An example body for the reference. */
  example?: unknown;
  /** Response headers worth naming (a redirect's Location, Retry-After, …). */
  headers?: Record<string, { description: string }>;
}

export interface RequestBodyDoc {
  schema: ZodTypeAny;
  /** `application/json` unless said otherwise (multipart uploads and imports, raw SNS text). */
  contentType?: string;
  example?: unknown;
  /** False when the body may be left out (it defaults to `{}`). */
  required?: boolean;
}

/** What the API description says of one route. Request schemas are those the handler parses with. */
export interface RouteDoc {
  summary: string;
  description?: string;
  /** Defaults to the router's tag. */
  tag?: string;
  /** Defaults to the router's access. */
  access?: RouteAccess;
  params?: AnyZodObject;
  query?: AnyZodObject;
  body?: RequestBodyDoc;
  responses: Record<number, ResponseDoc>;
  /**
   * The error statuses worth naming beyond those every route of its access can answer (400, 401,
   * 403, 404, 413, 422, 429, 500 are always described by the error envelope).
   * `plain400` marks the specification's three `{ error }` bodies.
   */
  plain400?: boolean;
}

export interface DescribedRoute {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete' | 'options';
  /** The router's path, `:name` parameters as koa writes them. */
  path: string;
  doc: RouteDoc & { tag: string; access: RouteAccess };
}

type Handler = Middleware<AppState>;

/** Routes a router was given through describedRoutes(), for the API description (api/openapi/apiDocument.ts). */
const describedRoutesOf = new WeakMap<Router<AppState>, DescribedRoute[]>();

export function routeDescriptions(router: Router<AppState>): DescribedRoute[] {
  return describedRoutesOf.get(router) ?? [];
}

/**
 * Registers a router's routes together with their description, so a route cannot be served
 * without being described (test/platform/apiDescription.test.ts compares both lists).
 * `router.use()` (auth, middleware) stays on the router itself.
 */
export function describedRoutes(router: Router<AppState>, defaults: { tag: string; access: RouteAccess }) {
  const routes: DescribedRoute[] = describedRoutesOf.get(router) ?? [];
  describedRoutesOf.set(router, routes);
  const register =
    (method: DescribedRoute['method']) =>
    (path: string, doc: RouteDoc, ...middleware: Handler[]): void => {
      routes.push({ method, path, doc: { ...doc, tag: doc.tag ?? defaults.tag, access: doc.access ?? defaults.access } });
      router[method](path, ...middleware);
    };
  return {
    get: register('get'),
    post: register('post'),
    put: register('put'),
    patch: register('patch'),
    delete: register('delete'),
    // A CORS preflight the route answers itself (POST /v1/track from browsers).
    options: register('options'),
  };
}
