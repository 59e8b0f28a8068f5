import { failpoint } from '../../shared/failpoints.ts';

// Fault injection for crash tests: with WALLET_FAULT=<point> the process kills itself (SIGKILL, no
// cleanup) when it reaches that point, so tests can check that a restart loses nothing and counts
// nothing twice. Points: `after-ledger-write` (entry published, no reply sent), `after-credit`
// (top-up credited, its document still pending). Unset in every normal run. WALLET_FAULT arms the
// failpoint of the same point (shared/failpoints.ts), so production mode ignores it like the others.
export function faultPoint(name: 'after-ledger-write' | 'after-credit'): void {
  failpoint(name === 'after-credit' ? 'wallet.after-topup-credit' : 'wallet.after-ledger-write');
}
