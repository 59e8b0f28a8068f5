// Issue 27 item 1, the older Chromium majors from @sparticuz/chromium (headless shell): shots and
// the PDF print of a page that tries every way out; nothing reaches an address the guard refuses.
// 143 runs in its own network namespace (the strong layer); 131 with the launch flags alone
// (outbound.browserNetns off: what a host without namespaces gets), so each layer is tested on
// its own without a second run per major.
import t from 'tap';
import { runEgress, startEgressEnv } from './browser-egress.ts';

const root = process.getuid?.() === 0;

t.test(
  'chromium-143 in a network namespace: no packet of a hostile page reaches a forbidden address, shots and pdf',
  { skip: !root && 'needs root for a network namespace' },
  async (t) => {
    const env = await startEgressEnv(t, { browserNetns: 'required' });
    await runEgress(t, env, ['chromium-143'], { pdf: true, netns: true });
  },
);

t.test('chromium-131 with flags only: no packet of a hostile page reaches a forbidden address, shots and pdf', async (t) => {
  const env = await startEgressEnv(t, { browserNetns: 'off' });
  await runEgress(t, env, ['chromium-131'], { pdf: true, netns: false });
});
