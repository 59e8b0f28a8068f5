// A unit on a thread of its own (server.unitThreads): a process that runs several units (the embedded
// default) runs the job-supervisor and the converter each on a worker thread with its own NATS
// connection, at a lower scheduling priority (server.unitThreadNice), so the gateway and the wallet on
// the main thread answer first when the machine's cores are busy with a crawl (docs/performance.md,
// the crawl's job reads). Linux's nice is per thread: the thread lowers its own, and the threads it
// starts (the converter's conversion threads) inherit it. Elsewhere setPriority affects the whole
// process, so the thread leaves it alone.
//
// The thread (unit-thread-boot.ts) reports `started` once its unit answers, `stopped` after the unit
// and its connection stopped when asked, and dies on an error it cannot handle (the launcher then stops the process: a
// unit that is gone must not leave the others serving without it).
import { Worker } from 'node:worker_threads';
import type { ActorHandle, ActorName } from '../shared/actor.ts';
import type { Config } from '../shared/config/index.ts';

export interface UnitThreadData {
  name: ActorName;
  url: string;
  config: Config;
  instanceId: string;
  nice: number;
}
export type UnitThreadMessage = { started: true } | { stopped: true } | { failed: string };

/** Start a unit on a thread of its own; answers its handle once it started. `onDeath`: the thread ended unasked. */
export function startUnitThread(data: UnitThreadData, onDeath: (e: Error) => void): Promise<ActorHandle> {
  const worker = new Worker(new URL('./unit-thread-boot.ts', import.meta.url), {
    workerData: data,
    name: `unit:${data.name}`,
  });
  let stopping: (() => void) | null = null;
  return new Promise((resolve, reject) => {
    let started = false;
    const fail = (e: Error) => (started ? (stopping ? stopping() : onDeath(e)) : reject(e));
    worker.on('message', (m: UnitThreadMessage) => {
      if ('started' in m) {
        started = true;
        resolve({
          stop: () =>
            new Promise<void>((done) => {
              stopping = done;
              worker.postMessage('stop');
            }).then(() => worker.terminate().then(() => {})),
        });
      } else if ('stopped' in m) stopping?.();
      else fail(new Error(`unit ${data.name}: ${m.failed}`));
    });
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`unit ${data.name}'s thread exited (${code})`)));
  });
}
