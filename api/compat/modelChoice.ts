import { type ModelRoute, modelRoute } from '../../shared/config/modelRoutes.ts';
import type { ProvidersConfig, RoutedCapability } from '../../shared/config/providersConfig.ts';
import { AppError } from '../../shared/errors/appError.ts';

/**
 * The route a compatible API's `model` names (shared/config/modelRoutes.ts), test keys included:
 * their fixtures answer, but a name that would not work live does not work for them either.
 * @throws AppError model_not_found.
 */
export function chosenRoute(
  providers: ProvidersConfig,
  capability: RoutedCapability,
  model: string | undefined,
): ModelRoute {
  const route = modelRoute(providers, capability, model);
  if (!route) {
    throw new AppError(
      'model_not_found',
      `The model '${model}' does not exist or you do not have access to it (see GET /models).`,
    );
  }
  return route;
}

/** Whether every entry of a route speaks the OpenAI protocol: what passes tools and formats through. */
export function routeIsOpenAi(providers: ProvidersConfig, route: ModelRoute): boolean {
  return (
    route.entries.length > 0 && route.entries.every((e) => providers.providers[e.provider]?.type === 'openai')
  );
}

/** Whether any entry of a route is a provider of `type` (its protocol decides what a call may carry). */
export function routeHas(providers: ProvidersConfig, route: ModelRoute, type: string): boolean {
  return route.entries.some((e) => providers.providers[e.provider]?.type === type);
}
