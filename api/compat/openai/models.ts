import type { RequestHandler } from 'express';

import { scopeAllows } from '../../../shared/auth/principal.ts';
import { modelNames } from '../../../shared/config/modelRoutes.ts';
import type { RoutedCapability } from '../../../shared/config/providersConfig.ts';
import { AppError } from '../../../shared/errors/appError.ts';
import type { AppDeps } from '../../deps.ts';

// The operation each capability's calls run as: a key may use a capability's models if its scope covers it.
const capabilityScopes: [RoutedCapability, string][] = [
  ['text', 'text.generate'],
  ['embedding', 'embeddings.create'],
  ['image', 'images.generate'],
  ['transcription', 'transcriptions.create'],
];

type ModelObject = { id: string; object: 'model'; created: number; owned_by: string };

/** The models a key may use: each capability its scope covers, `default` and aliases then pairs, once each. */
function usableModels(deps: AppDeps, scope: Parameters<typeof scopeAllows>[0]): ModelObject[] {
  const seen = new Map<string, ModelObject>();
  for (const [capability, operation] of capabilityScopes) {
    if (!scopeAllows(scope, operation)) continue;
    for (const id of modelNames(deps.config.providers, capability)) {
      const slash = id.indexOf('/');
      // Routes and aliases are the platform's; a pair is its provider's model.
      const owner = slash === -1 ? 'svc-platform' : id.slice(0, slash);
      if (!seen.has(id)) seen.set(id, { id, object: 'model', created: 0, owned_by: owner });
    }
  }
  return [...seen.values()];
}

/** GET /models: what this key may name as `model`. */
export function listModels(deps: AppDeps): RequestHandler {
  return (req, res) => {
    res.json({ object: 'list', data: usableModels(deps, req.principal!.scope) });
  };
}

/** GET /models/{model}: one of them, or model_not_found. */
export function retrieveModel(deps: AppDeps): RequestHandler {
  return (req, res) => {
    const wanted = req.call!.params.model!;
    const model = usableModels(deps, req.principal!.scope).find((m) => m.id === wanted);
    if (!model) {
      throw new AppError(
        'model_not_found',
        `The model '${wanted}' does not exist or you do not have access to it.`,
      );
    }
    res.json(model);
  };
}
