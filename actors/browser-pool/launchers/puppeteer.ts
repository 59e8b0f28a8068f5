// puppeteer-core, loaded through its CommonJS build: its ESM build reaches chromium-bidi through a
// subpath export that some ESM loaders (ts-node's, used by the test runner) resolve wrongly
// (`BidiMapper.js.js`), which breaks every Firefox launch under them. require() resolves it right.
import { createRequire } from 'node:module';
import type { PuppeteerNode } from 'puppeteer-core';

const require = createRequire(import.meta.url);
const puppeteer = (require('puppeteer-core') as { default: PuppeteerNode }).default;
export default puppeteer;
