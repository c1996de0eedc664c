import type { z } from 'zod';
import type { Project } from '../../db/entities/project';
import type { projectResponse } from '../schemas/projectSchemas';

/** The project as the dashboard sees it: never the secret key, only its last characters. */
export function serializeProject(project: Project): z.input<typeof projectResponse> {
  return {
    id: project.id,
    name: project.name,
    publicKey: project.publicKey,
    secretKeyHint: `sk_…${project.secretKeyHint}`,
    disabled: project.disabled,
    disabledReason: project.disabledReason ?? null,
    campaignRatePerSecond: project.campaignRatePerSecond ?? null,
    keysRotatedAt: project.keysRotatedAt ?? null,
    createdAt: project.createdAt,
    updatedAt: project.updatedAt,
  };
}
