// Preloaded into tap's runner and every test file's process through NODE_OPTIONS (scripts/tap.sh, which
// package.json's test scripts run), so it runs before the `--import`s tap puts on the test's command
// line. A relative path: tap starts test files in the project's folder, and test/helpers/tap-children.ts
// takes it out of NODE_OPTIONS before a test starts anything of its own.
//
// On Node 22 two of those register module hooks with `module.register`, which starts a hooks thread
// that every later import passes through: @tapjs/processinfo's (it records loaded files, for coverage
// and `tap --changed`) and @tapjs/mock's (for `t.mockImport`). This suite uses neither: coverage is
// off, and test/platform/tap-no-hooks.test.ts fails if a test file calls t.mockImport/t.mockRequire.
// The thread cost a test file about 1.5 s of CPU (22 gateway and converter files: 287 s of CPU with
// it, 255 s without), about a tenth of the whole suite's CPU. This drops those two registrations and
// passes every other one through; tap's in-thread hooks (Node >= 24.13) do not come here at all.
// processinfo's own main-thread part still runs (tap's runner reads what it writes at exit).
//
// .mjs, not .ts: tap's runner loads it too, before any TypeScript support is in place.
import module from 'node:module';

const SKIPPED = Symbol.for('payloads.tapHooksSkipped');
const TAP_HOOKS = /[\\/]@tapjs[\\/](processinfo|mock)[\\/]/;
const register = module.register;
/** @type {string[]} the loaders this dropped, for the test that checks it is in place */
const skipped = (globalThis[SKIPPED] = []);

module.register = function registerUnlessTapHooks(specifier, ...rest) {
  const url = String(specifier);
  if (TAP_HOOKS.test(url)) {
    skipped.push(url);
    return;
  }
  return register.call(this, specifier, ...rest);
};
// @tapjs/mock takes `register` as a named import: make that binding see the wrapper too
module.syncBuiltinESMExports();
