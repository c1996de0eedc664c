import { handlebars } from './handlebarsEnvironment';
import { rewriteFallbacks } from './fallbackSyntax';

/** The helpers a template may call (templateCompiler compiles with knownHelpersOnly): their names are no variables. */
const HELPERS = new Set(['default', 'if', 'unless', 'each', 'with', 'lookup', 'log']);

/** Where a path is read: `prefix` names the object it is relative to (null inside `#each`, whose items have no name). */
interface Scope {
  prefix: string[] | null;
  blockParams: Set<string>;
  parent: Scope | null;
}

/**
 * The variables a template reads (its subject and body), as dotted paths, sorted and once each:
 * `{{firstName}}`, `{{data.plan.name}}`, the value and fallback paths of `{{default a b}}` and
 * `{{a ?? b}}`, the conditions of `#if`/`#unless`, the list of `#each` (not its items' fields, which
 * are relative to each item), and paths inside `#with x` as `x.<path>`. What a dashboard lists
 * beside the editor; a template that does not parse reads nothing (the renderer reports why).
 */
export function templateVariableNames(...sources: string[]): string[] {
  const found = new Set<string>();
  for (const source of sources) {
    if (!source.includes('{{')) continue;
    let program: hbs.AST.Program;
    try {
      program = handlebars.parse(rewriteFallbacks(source));
    } catch {
      continue;
    }
    walkProgram(program, { prefix: [], blockParams: new Set(), parent: null }, found);
  }
  return [...found].sort((a, b) => a.localeCompare(b));
}

function walkProgram(program: hbs.AST.Program | undefined, scope: Scope, found: Set<string>): void {
  if (!program) return;
  for (const statement of program.body) walkStatement(statement, scope, found);
}

function walkStatement(node: hbs.AST.Statement, scope: Scope, found: Set<string>): void {
  switch (node.type) {
    case 'MustacheStatement': {
      const mustache = node as hbs.AST.MustacheStatement;
      walkCall(mustache.path, mustache.params, mustache.hash, scope, found);
      return;
    }
    case 'BlockStatement': {
      const block = node as hbs.AST.BlockStatement;
      const helper = block.path.type === 'PathExpression' ? block.path.original : '';
      const firstParam = block.params[0];
      if (!HELPERS.has(helper)) {
        // `{{#list}}…{{/list}}`: a section over a variable (Handlebars' blockHelperMissing), its inside relative to it.
        const path = resolvePath(block.path, scope);
        if (path) found.add(path.join('.'));
        walkProgram(block.program, { prefix: null, blockParams: new Set(block.program?.blockParams ?? []), parent: scope }, found);
        walkProgram(block.inverse, scope, found);
        return;
      }
      for (const param of block.params) walkExpression(param, scope, found);
      walkHash(block.hash, scope, found);
      let inner: Scope = scope;
      if (helper === 'each') inner = { prefix: null, blockParams: new Set(block.program?.blockParams ?? []), parent: scope };
      if (helper === 'with') {
        const target = firstParam?.type === 'PathExpression' ? resolvePath(firstParam as hbs.AST.PathExpression, scope) : null;
        inner = { prefix: target, blockParams: new Set(block.program?.blockParams ?? []), parent: scope };
      }
      walkProgram(block.program, inner, found);
      walkProgram(block.inverse, scope, found);
      return;
    }
    default:
      // Text, comments, partials (refused when compiled) and decorators read no variable.
      return;
  }
}

/** A mustache or sub-expression: with parameters its path is a helper, without it is the variable itself. */
function walkCall(
  path: hbs.AST.PathExpression | hbs.AST.Literal,
  params: hbs.AST.Expression[],
  hash: hbs.AST.Hash | undefined,
  scope: Scope,
  found: Set<string>,
): void {
  const isCall = params.length > 0 || (hash?.pairs.length ?? 0) > 0;
  if (!isCall) {
    walkExpression(path, scope, found);
    return;
  }
  for (const param of params) walkExpression(param, scope, found);
  walkHash(hash, scope, found);
}

function walkHash(hash: hbs.AST.Hash | undefined, scope: Scope, found: Set<string>): void {
  for (const pair of hash?.pairs ?? []) walkExpression(pair.value, scope, found);
}

function walkExpression(node: hbs.AST.Expression, scope: Scope, found: Set<string>): void {
  if (node.type === 'SubExpression') {
    const sub = node as hbs.AST.SubExpression;
    walkCall(sub.path, sub.params, sub.hash, scope, found);
    return;
  }
  if (node.type !== 'PathExpression') return;
  const path = node as hbs.AST.PathExpression;
  if (!path.data && path.parts.length === 1 && HELPERS.has(path.parts[0]) && path.original === path.parts[0]) return;
  const resolved = resolvePath(path, scope);
  if (resolved && resolved.length) found.add(resolved.join('.'));
}

/**
 * The path from the top of the variables, or null when it is relative to something without a name
 * (an `#each` item, a block parameter) or is data other than `@root`.
 */
function resolvePath(path: hbs.AST.PathExpression, scope: Scope): string[] | null {
  if (path.data) return path.parts[0] === 'root' || path.original.startsWith('@root') ? rootParts(path) : null;
  let at: Scope | null = scope;
  for (let depth = path.depth; depth > 0 && at; depth--) {
    // `../` steps out of a block that changed the context (#each, #with); #if and #unless keep it.
    at = at.parent;
  }
  if (!at) return null;
  if (path.parts.length && scopeHasBlockParam(at, path.parts[0])) return null;
  if (at.prefix === null) return null;
  return [...at.prefix, ...path.parts];
}

function rootParts(path: hbs.AST.PathExpression): string[] | null {
  const parts = path.parts[0] === 'root' ? path.parts.slice(1) : path.parts;
  return parts.length ? parts : null;
}

function scopeHasBlockParam(scope: Scope | null, name: string): boolean {
  for (let at = scope; at; at = at.parent) if (at.blockParams.has(name)) return true;
  return false;
}
