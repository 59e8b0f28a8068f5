// Failpoints: crash tests stop a process right after a write on a money path, then restart it and
// check that nothing was lost or counted twice (test/reliability/failpoints.scenario.ts walks them all).
// Off unless PAYLOADS_FAILPOINTS names some (comma-separated) or WALLET_FAULT one of the wallet's;
// never on with NODE_ENV=production or in production mode (MODE=production, disarmFailpointsIn).
// A named point reached kills its own process (SIGKILL: no stop step, no flush, as a power cut).
export const FAILPOINTS = {
  // gateway: job creation
  'gateway.after-charge': 'the wallet charged the job; nothing else written',
  'gateway.after-dataset-claim': "the wallet's dataset mark is claimed for the job, before its charge",
  'gateway.after-tasks': "the job's tasks are published, its document not written",
  'gateway.after-job-write': 'the job document is written, the client not answered',
  // job-supervisor
  'supervisor.after-dispatch-tasks': "a job written `queued` has its tasks published by the supervisor's dispatch, not marked dispatched",
  'supervisor.after-outcome': "a result's outcome is written to the job document",
  'supervisor.after-result-refund': 'a failed result is refunded in the ledger, not yet marked refunded',
  'supervisor.after-refund-mark': 'refunds are marked in the job document, the job not finished',
  'supervisor.after-settle': 'the job is finished (completed or failed), its event not sent',
  'supervisor.after-lost-file': 'a delivered result whose file is gone is marked failed, not refunded',
  'supervisor.after-dataset-release': "an unused dataset fee's mark is given back, the job not finished",
  // wallet
  'wallet.after-ledger-write': 'any ledger entry (charge, refund, credit) is written, not answered',
  'wallet.after-orphan-refund': 'a charge without a job is refunded by the orphan sweep',
  'wallet.after-topup-credit': 'a paid top-up is credited, its document still pending',
} as const;
export type FailpointName = keyof typeof FAILPOINTS;

/** WALLET_FAULT's older names (the wallet's crash tests), the same points as these failpoints. */
const WALLET_FAULTS: Record<string, FailpointName> = {
  'after-ledger-write': 'wallet.after-ledger-write',
  'after-credit': 'wallet.after-topup-credit',
};

/** What the environment arms: PAYLOADS_FAILPOINTS and WALLET_FAULT; nothing with NODE_ENV=production. */
function armedBy(env: NodeJS.ProcessEnv): Set<string> {
  if (env.NODE_ENV === 'production') return new Set();
  const names = (env.PAYLOADS_FAILPOINTS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of names) if (!Object.hasOwn(FAILPOINTS, name)) throw new Error(`PAYLOADS_FAILPOINTS: unknown failpoint ${name}`);
  const fault = env.WALLET_FAULT ?? '';
  if (fault && WALLET_FAULTS[fault]) names.push(WALLET_FAULTS[fault]);
  return new Set(names);
}

const armed = armedBy(process.env);

/**
 * Production mode ignores every failpoint and WALLET_FAULT (issue 44 item 8): a variable left in a
 * service's environment must not let a process kill itself on a money path. Called by the launched
 * process's config loader (shared/runtime.ts loadConfigOrExit) once it knows the mode.
 */
export function disarmFailpointsIn(mode: 'development' | 'production'): void {
  if (mode !== 'production' || !armed.size) return;
  process.stderr.write(`production mode: failpoints ignored (${[...armed].join(', ')})\n`);
  armed.clear();
}

/** Stop this process here if the failpoint is armed. A no-op in every normal run. */
export function failpoint(name: FailpointName): void {
  if (armed.size && armed.has(name)) {
    process.stderr.write(`failpoint ${name} reached: killing process ${process.pid}\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
