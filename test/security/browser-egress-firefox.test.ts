// Issue 27 item 1, Firefox ESR over WebDriver BiDi (one process per colour scheme): shots of a page
// that tries every way out; nothing reaches an address the guard refuses. Firefox does not print.
import t from 'tap';
import { runEgress, startEgressEnv } from './browser-egress.ts';

t.test('firefox: no packet of a hostile page reaches a forbidden address', async (t) => {
  const env = await startEgressEnv(t, { browserNetns: process.getuid?.() === 0 ? 'required' : 'auto' });
  await runEgress(t, env, ['firefox'], { pdf: false, netns: process.getuid?.() === 0 ? true : undefined });
});
