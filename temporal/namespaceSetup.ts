/**
 * Makes sure the namespace exists and carries Mailroom's search attributes before the API
 * starts workflows or the worker polls. Where the server lets us (dev server, self-hosted), the
 * missing attributes are registered here; where it refuses (Temporal Cloud), start-up stops with
 * one message naming the namespace, each missing attribute and how to create it.
 */
import type { OperatorService, WorkflowService } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import type { Logger } from '../lib/logger';
import { mailroomSearchAttributes } from './searchAttributes';
import { isNotFound, isPermissionDenied, isUnknownSearchAttribute, grpcStatusOf, temporalErrorReason } from './temporalErrors';
import { TemporalSetupError, WaitingFor } from './waitForTemporal';

/** What both `Connection` and `NativeConnection` offer. */
export interface TemporalServices {
  workflowService: WorkflowService;
  operatorService: OperatorService;
  withDeadline<R>(deadline: number, fn: () => Promise<R>): Promise<R>;
}

export interface NamespaceSetupOptions {
  namespace: string;
  /** Register the namespace when it is missing (TEMPORAL_CREATE_NAMESPACE). */
  createNamespace: boolean;
  retentionDays: number;
  logger: Logger;
}

/** temporal.api.enums.v1.IndexedValueType of the types Mailroom's attributes use. */
const INDEXED_VALUE_TYPES: Record<string, number> = { KEYWORD: 2, KEYWORD_LIST: 7 };
/** How the CLI and Temporal Cloud spell those types. */
const TYPE_NAMES: Record<string, string> = { KEYWORD: 'Keyword', KEYWORD_LIST: 'KeywordList' };

const attributeType = (name: string) => mailroomSearchAttributes.find((key) => key.name === name)?.type ?? 'KEYWORD';
const indexedValueType = (name: string) => INDEXED_VALUE_TYPES[attributeType(name)];
const typeName = (name: string) => TYPE_NAMES[attributeType(name)];
const ALREADY_EXISTS = 6;
/** Each call's deadline: a connection to an unreachable Temporal otherwise waits indefinitely. */
const CALL_TIMEOUT_MS = 5000;
/** A just-registered attribute or namespace reaches the server's caches within seconds. */
const VISIBLE_WITHIN_MS = 30_000;

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function bounded<R>(services: TemporalServices, fn: () => Promise<R>): Promise<R> {
  return services.withDeadline(Date.now() + CALL_TIMEOUT_MS, fn);
}

function createNamespaceCommand(namespace: string, retentionDays: number): string {
  return `temporal operator namespace create --namespace ${namespace} --retention ${retentionDays * 24}h`;
}

export function createSearchAttributeCommands(namespace: string, names: string[]): string[] {
  return names.map((name) => `temporal operator search-attribute create --namespace ${namespace} --name ${name} --type ${typeName(name)}`);
}

/** The operator's instructions when the server would not let us register the attributes ourselves. */
export function missingSearchAttributesMessage(namespace: string, missing: string[], reason: string): string {
  return (
    `Temporal namespace "${namespace}" lacks the search attributes ${missing.map((name) => `${name} (${typeName(name)})`).join(', ')} that Mailroom's workflows carry, ` +
    `and the server refused to register them (${reason}). Create them once, then start Mailroom again:\n` +
    createSearchAttributeCommands(namespace, missing)
      .map((c) => `  ${c}`)
      .join('\n') +
    `\nOn Temporal Cloud: ` +
    missing.map((name) => `tcld namespace search-attributes add --namespace ${namespace} --search-attribute "${name}=${typeName(name)}"`).join(' ; ') +
    `, or in the Cloud UI: Namespaces > ${namespace} > Edit > Custom Search Attributes > Add, with the types above.`
  );
}

async function namespaceExists(services: TemporalServices, namespace: string): Promise<boolean> {
  try {
    await bounded(services, () => services.workflowService.describeNamespace({ namespace }));
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

async function ensureNamespace(services: TemporalServices, options: NamespaceSetupOptions): Promise<void> {
  const { namespace, retentionDays, logger } = options;
  if (await namespaceExists(services, namespace)) return;
  if (!options.createNamespace) {
    throw new WaitingFor(
      `waiting for Temporal namespace "${namespace}" to exist: create it with \`${createNamespaceCommand(namespace, retentionDays)}\` or set TEMPORAL_CREATE_NAMESPACE=true`,
      { namespace },
    );
  }
  try {
    await bounded(services, () =>
      services.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs(`${retentionDays} days`),
        description: 'Mailroom',
      }),
    );
    logger.info({ event: 'temporal.namespace_created', namespace, retentionDays }, `created Temporal namespace "${namespace}"`);
  } catch (err) {
    if (grpcStatusOf(err) === ALREADY_EXISTS) return; // another Mailroom process was first
    if (isPermissionDenied(err)) {
      throw new TemporalSetupError(
        `Temporal namespace "${namespace}" does not exist and the server refused to create it (${temporalErrorReason(err)}). ` +
          `Create it with \`${createNamespaceCommand(namespace, retentionDays)}\` (Temporal Cloud: in the Cloud UI or with tcld), or point TEMPORAL_NAMESPACE at an existing one.`,
      );
    }
    throw err;
  }
  // The new namespace reaches the frontend's cache a moment later.
  for (const deadline = Date.now() + VISIBLE_WITHIN_MS; !(await namespaceExists(services, namespace));) {
    if (Date.now() > deadline) throw new Error(`namespace "${namespace}" was created but is not visible yet`);
    await delay(500);
  }
}

async function customSearchAttributes(services: TemporalServices, namespace: string): Promise<Record<string, number>> {
  const { customAttributes } = await bounded(services, () => services.operatorService.listSearchAttributes({ namespace }));
  return customAttributes ?? {};
}

async function ensureSearchAttributes(services: TemporalServices, options: NamespaceSetupOptions): Promise<void> {
  const { namespace, logger } = options;
  const wanted = mailroomSearchAttributes.map((key) => key.name);
  let existing: Record<string, number>;
  try {
    existing = await customSearchAttributes(services, namespace);
  } catch (err) {
    if (!isPermissionDenied(err)) throw err;
    // Some hosted frontends do not let clients list them; starting a workflow will tell.
    logger.warn(
      { event: 'temporal.search_attributes_unchecked', namespace, error: temporalErrorReason(err) },
      "could not list the namespace's search attributes; assuming they exist",
    );
    return;
  }
  const wrongType = wanted.filter((name) => name in existing && existing[name] !== indexedValueType(name));
  if (wrongType.length > 0) {
    throw new TemporalSetupError(
      `Temporal namespace "${namespace}" has the search attributes ${wrongType.join(', ')} with another type than Mailroom needs (${wrongType.map((name) => `${name}: ${typeName(name)}`).join(', ')}). ` +
        `Remove them (temporal operator search-attribute remove --namespace ${namespace} --name <name>) and start Mailroom again to have them registered.`,
    );
  }
  const missing = wanted.filter((name) => !(name in existing));
  if (missing.length === 0) return untilSearchAttributesUsable(services, namespace);
  try {
    await bounded(services, () =>
      services.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(missing.map((name) => [name, indexedValueType(name)])),
      }),
    );
  } catch (err) {
    if (isPermissionDenied(err)) throw new TemporalSetupError(missingSearchAttributesMessage(namespace, missing, temporalErrorReason(err)));
    // A concurrent registration by another Mailroom process; the check below confirms it.
    if (grpcStatusOf(err) !== ALREADY_EXISTS) throw err;
  }
  for (const deadline = Date.now() + VISIBLE_WITHIN_MS; ;) {
    const now = await customSearchAttributes(services, namespace);
    if (missing.every((name) => name in now)) break;
    if (Date.now() > deadline) throw new Error(`search attributes ${missing.join(', ')} were added but are not listed yet`);
    await delay(500);
  }
  await untilSearchAttributesUsable(services, namespace);
  logger.info(
    { event: 'temporal.search_attributes_registered', namespace, searchAttributes: missing },
    `registered search attributes ${missing.join(', ')} in namespace "${namespace}"`,
  );
}

/**
 * Waits until the frontend maps every attribute for the namespace. The listing above reads the
 * namespace's record, but starts are checked against the frontend's namespace cache: a frontend
 * other than the one that registered them learns of them at its next refresh (every 10 s by
 * default), and until then refuses a start naming them (INVALID_ARGUMENT "Namespace <ns> has no
 * mapping defined for search attribute ProjectId"). A visibility query naming every attribute
 * goes through that same mapping and starts nothing. A frontend that cannot answer the query
 * (not allowed, not supported) tells nothing: the starts' own retry covers it.
 */
async function untilSearchAttributesUsable(services: TemporalServices, namespace: string): Promise<void> {
  const query = mailroomSearchAttributes.map((key) => `${key.name} = ''`).join(' AND ');
  for (const deadline = Date.now() + VISIBLE_WITHIN_MS; ;) {
    try {
      await bounded(services, () => services.workflowService.countWorkflowExecutions({ namespace, query }));
      return;
    } catch (err) {
      if (!isUnknownSearchAttribute(err)) return;
      if (Date.now() > deadline)
        throw new Error(`search attributes are registered but namespace "${namespace}" does not map them yet: ${temporalErrorReason(err)}`);
      await delay(500);
    }
  }
}

/** Checks (and where needed creates) the namespace and Mailroom's search attributes. */
export async function ensureNamespaceSetup(services: TemporalServices, options: NamespaceSetupOptions): Promise<void> {
  await ensureNamespace(services, options);
  await ensureSearchAttributes(services, options);
}
