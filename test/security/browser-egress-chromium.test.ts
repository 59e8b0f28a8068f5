// Issue 27 item 1, Debian's Chromium and the phone profile (the same binary): shots and the PDF
// print of a page that tries every way out; nothing reaches an address the guard refuses.
import t from 'tap';
import { runEgress, startEgressEnv } from './browser-egress.ts';

t.test('chromium + mobile: no packet of a hostile page reaches a forbidden address, shots and pdf', async (t) => {
  const env = await startEgressEnv(t, { browserNetns: process.getuid?.() === 0 ? 'required' : 'auto' });
  await runEgress(t, env, ['chromium', 'mobile'], { pdf: true, netns: process.getuid?.() === 0 ? true : undefined });
});
