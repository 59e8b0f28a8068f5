// A delivered result whose stored file is gone (a lost object, a store failure): it can never be
// downloaded, so it is refunded. Whoever notices (the gateway at a download, the supervisor's
// sweep) reports it on the result's RESULTS subject, so it takes the supervisor's one recording
// path and is acted on even if no supervisor runs at that moment. The supervisor checks the store
// itself before refunding (actors/job-supervisor/steps.ts loseResult), and the message id makes
// repeated reports one.
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { subjects } from '../names.ts';
import { lostMsgId, type Outcome } from '../protocol/jobs.ts';

export async function reportLostFile(nc: NatsConnection, jobId: string, resultKey: string, message: string): Promise<void> {
  const o: Outcome = { v: 1, kind: 'lost', jobId, resultKey, at: Date.now(), message };
  await jetstream(nc).publish(subjects.result(jobId), JSON.stringify(o), { msgID: lostMsgId(jobId, resultKey) });
}
