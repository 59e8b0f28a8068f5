// Registry of runnable units. Loaded lazily so a process starts only the code it runs.
import type { ActorStart, ActorName } from '../shared/actor.ts';

export const ACTORS: Record<ActorName, () => Promise<{ start: ActorStart }>> = {
  wallet: () => import('./wallet/index.ts'),
  'job-supervisor': () => import('./job-supervisor/index.ts'),
  converter: () => import('./converter/index.ts'),
  'browser-pool': () => import('./browser-pool/index.ts'),
  'relay-prober': () => import('./relay-prober/index.ts'),
};

export { startUnitThread } from './unit-threads.ts';
