// Issue 27 item 1, the older Chromium majors from @sparticuz/chromium (headless shell): shots and
// the PDF print of a page that tries every way out; nothing reaches an address the guard refuses.
import t from 'tap';
import { runEgress, startEgressEnv } from './browser-egress.ts';

for (const id of ['chromium-143', 'chromium-131']) {
  t.test(`${id}: no packet of a hostile page reaches a forbidden address, shots and pdf`, async (t) => {
    const env = await startEgressEnv(t);
    await runEgress(t, env, [id], { pdf: true });
  });
}
