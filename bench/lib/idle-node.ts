// The memory baseline: a Node process started the way actors are (`node --import tsx`), holding one
// NATS connection and doing nothing else. Prints `ready` once connected.
import { connectNats } from '../../shared/nats/connect.ts';

const nc = await connectNats(process.env.NATS_URL ?? '', 'bench-idle-node');
process.stdout.write('ready\n');
const stop = () => {
  void nc.close().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
