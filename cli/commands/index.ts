import type { CommandTable } from '../commandTable.ts';
import { brainCommands } from './brain.ts';
import { coreCommands } from './core.ts';
import { oauthAppCommands } from './oauthApps.ts';
import { providerCommands } from './providers.ts';
import { queueCommands } from './queue.ts';
import { staffCommands } from './staff.ts';
import { webhookCommands } from './webhooks.ts';
import { workflowCommands } from './workflows.ts';

/** Every operator command (DESIGN.md "Operator CLI"): other capabilities add their groups here. */
export const commands: CommandTable = {
  ...coreCommands,
  ...staffCommands,
  ...workflowCommands,
  ...webhookCommands,
  ...brainCommands,
  ...oauthAppCommands,
  ...queueCommands,
  ...providerCommands,
};
