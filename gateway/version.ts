// The release this gateway runs: package.json's `version` (CHANGELOG.md says what each holds),
// shown in the `/v1` answer and as the `payloads_build_info` metric.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../shared/config/index.ts';

export const VERSION: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
