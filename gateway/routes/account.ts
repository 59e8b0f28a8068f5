import type { Route } from '../route.ts';

export const routes: Route[] = [];
