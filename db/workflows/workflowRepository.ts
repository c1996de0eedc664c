/**
 * The old path and name of db/automations/automationRepository.ts, kept only while
 * api/routes/eventRoutes.ts and api/routes/templateRoutes.ts (edited on another branch) import it:
 * once they import automationRepository from db/automations, delete this file.
 */
export { automationRepository as workflowRepository } from '../automations/automationRepository';
