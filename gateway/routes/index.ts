import type { Route, RouteDeps } from '../route.ts';
import { publicRoutes } from './public.ts';
import { opsRoutes } from './ops.ts';
import { routes as walletRoutes } from './wallet.ts';
import { routes as jobRoutes } from './jobs.ts';
import { eventsRoute } from './events.ts';
import { routes as accountRoutes } from './account.ts';
import { routes as webhookRoutes } from './webhooks.ts';
import { openapiRoute } from '../openapi.ts';
import { referenceRoutes } from '../pages/reference.ts';
import { homeRoute } from './home.ts';

export function allRoutes(deps: RouteDeps): Route[] {
  const routes: Route[] = [
    ...publicRoutes,
    ...walletRoutes,
    ...jobRoutes,
    ...webhookRoutes,
    eventsRoute,
    ...accountRoutes,
    ...opsRoutes(deps),
    ...referenceRoutes,
    homeRoute,
  ];
  return [...routes, openapiRoute(routes)];
}
