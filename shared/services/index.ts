import type { ServiceName } from '../names.ts';
import type { ServiceModule } from './types.ts';
import { websitepro } from './websitepro.ts';
import { shots } from './shots.ts';
import { labs } from './labs.ts';

export const SERVICE_MODULES: Record<ServiceName, ServiceModule> = { websitepro, shots, labs };
export type { ServiceModule, Plan, PlanItem, PlanContext } from './types.ts';
