import { failpoint } from '../../shared/failpoints.ts';

// Fault injection for crash tests: with WALLET_FAULT=<point> the process kills itself (SIGKILL, no
// cleanup) when it reaches that point, so tests can check that a restart loses nothing and counts
// nothing twice. Points: `after-ledger-write` (entry published, no reply sent), `after-credit`
// (top-up credited, its document still pending). Unset in every normal run.
export function faultPoint(name: 'after-ledger-write' | 'after-credit'): void {
  if (process.env.WALLET_FAULT === name) process.kill(process.pid, 'SIGKILL');
  failpoint(name === 'after-credit' ? 'wallet.after-topup-credit' : 'wallet.after-ledger-write');
}
