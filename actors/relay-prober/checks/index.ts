// The catalogue of checks. Each has an id, a title, a module, its basis in the spec (NIP, section,
// level), whether it needs the test dataset, and how many round trips it needs at least (the
// benchmark compares the real count with that). `run` returns the observed status; the runner
// turns a `fail` of a recommended/convention check into `warn` (only required/essential can fail).
// One file per group of checks; this file only orders them.
import type { CheckInfo, LabsModule } from '../../../shared/services/index.ts';
import type { CheckDef } from './common.ts';
import { QUICK_CHECKS } from './quick.ts';
import { filterChecks } from './filters.ts';
import { KIND_CHECKS } from './kinds.ts';
import { MESSAGE_CHECKS } from './messages.ts';
import { DELETION_CHECKS } from './deletion.ts';
import { LIMIT_CHECKS } from './limits.ts';
import { NIP_CHECKS } from './nips.ts';

export { cleanup, cleanupAfterStop, deleteTestEvents, type CleanupResult } from './cleanup.ts';
export { percentiles, flip, dataset, type CheckDef, type Outcome, type Dataset } from './common.ts';

const ALL_CHECKS: CheckDef[] = [
  ...QUICK_CHECKS,
  ...filterChecks(),
  ...KIND_CHECKS,
  ...MESSAGE_CHECKS,
  ...DELETION_CHECKS,
  ...LIMIT_CHECKS,
  ...NIP_CHECKS,
];

// Checks that judge everything seen during the run go last within their module.
const LAST = new Set(['event-subid', 'filter-nonmatching', 'ok-format', 'cleanup']);
export const CHECKS: CheckDef[] = [...ALL_CHECKS.filter((c) => !LAST.has(c.id)), ...ALL_CHECKS.filter((c) => LAST.has(c.id))];

export const checkById = new Map(CHECKS.map((c) => [c.id, c]));
export const moduleChecks = (m: LabsModule) => CHECKS.filter((c) => c.module === m);

/** The catalogue entry of a check (what GET /v1/services/labs lists). */
export const checkInfo = (c: CheckDef): CheckInfo => ({
  id: c.id,
  title: c.title,
  module: c.module,
  needsDataset: c.needsDataset,
  selectable: c.selectable,
  basis: c.basis,
});
