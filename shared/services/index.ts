import type { ServiceName } from '../names.ts';
import type { ServiceModule } from './types.ts';
import { websitepro } from './websitepro.ts';
import { shots } from './shots.ts';
import { labs } from './labs.ts';

export const SERVICE_MODULES: Record<ServiceName, ServiceModule> = { websitepro, shots, labs };
export type { ServiceModule, Plan, PlanItem, PlanContext } from './types.ts';
// what the workers and the catalogue share with the service modules
export {
  VIEWPORT_PRESETS,
  VIEWPORT_LIMITS,
  DEFAULT_VIEWPORT,
  SCHEMES,
  DELAYS,
  COMPARE_MAX_PAIRS,
  diffKey,
  mergeOffers,
  type BrowserOffer,
} from './shots.ts';
export {
  ENGINE_LACKS,
  SHOT_FORMATS,
  THUMB_WIDTHS,
  DEFAULT_QUALITY,
  FORMAT_TYPE,
  type ShotControls,
  type ShotSecrets,
} from './shots-options.ts';
export { LABS_MODULES, checkAddress, type LabsModule, type CheckInfo, type CheckedAddress } from './labs.ts';
export { keepTaskSecrets, taskParams } from './task-secret.ts';
export type { ConverterControls, ControlSecrets } from './websitepro-controls.ts';
export { mapBlocks, scopeRulesOf } from './websitepro-crawl.ts';
export { RENDER_KEY } from './websitepro.ts';
export {
  claimDatasetMark,
  confirmDatasetMark,
  datasetFeeOwed,
  datasetUsers,
  isDatasetFee,
  releaseDatasetMark,
  type DatasetMark,
  type MarkStaleness,
} from './dataset.ts';
