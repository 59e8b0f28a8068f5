// The targets every capture path (a shot, a websitepro pdf, browser-pool's render endpoints) is
// tried on for its error codes, on the shots fixture server: a reached page is never
// `unreachable`, whatever goes wrong on it. `expect` is the code each one must end with.
import { startFixtures, type Fixtures } from '../shots/fixtures.ts';
import { closedPort } from './ports.ts';

type Tap = { teardown(fn: () => unknown): void };

export interface FailingTargets {
  fx: Fixtures;
  /** A loopback port this test bound and released: nothing listens. */
  dead: string;
  /** Answers with a download (Content-Disposition: attachment), not a page. */
  download: string;
  /** A script that never ends. */
  endless: string;
  /** An alert() on load: a capture answers it and goes on. */
  dialog: string;
}

export const EXPECTED = { dead: 'unreachable', download: 'render_failed', endless: 'timeout' } as const;

export async function failingTargets(t: Tap): Promise<FailingTargets> {
  const fx = await startFixtures(t);
  return {
    fx,
    dead: `http://127.0.0.1:${await closedPort()}/`,
    download: fx.url('/attachment'),
    endless: fx.url('/loop/inline'),
    dialog: fx.url('/dialog/load'),
  };
}
