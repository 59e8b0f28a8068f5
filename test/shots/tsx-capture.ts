// Run by tsx-runtime.test.ts under `node --import tsx` (how `npm start` runs the actor): one
// capture of each URL given, printing each shot's `extra` (or its failure) as a JSON line.
import { launcherFor } from '../../actors/browser-pool/launchers/registry.ts';
import { ManagedBrowser } from '../../actors/browser-pool/pool.ts';
import { captureShot } from '../../actors/browser-pool/capture.ts';
import { testLog } from '../helpers/nats.ts';

const [id, ...urls] = process.argv.slice(2);
const launcher = launcherFor(id!);
const mb = new ManagedBrowser(launcher, launcher.schemePerBrowser ? { scheme: 'light' } : {}, 100, testLog());
const version = await mb.warm();
for (const url of urls) {
  const out = await mb
    .withPage(30000, (page) =>
      captureShot(
        page,
        {
          url,
          browser: launcher.browserId,
          version,
          viewport: { w: 800, h: 600 },
          scheme: 'light',
          options: { fullPage: true, retina: false, hideCookieBanner: true, delay: 0 },
        },
        { launcher, version, navTimeoutMs: 28000, progress: async () => {} },
      ),
    )
    .then(
      (s) => s.extra,
      (e: unknown) => ({ failed: String(e) }),
    );
  console.log(JSON.stringify(out));
}
await mb.close();
