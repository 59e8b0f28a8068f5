// Runs convert() for the pool (pool.ts), one message at a time.
import { parentPort } from 'node:worker_threads';
import { convert, type ConvertInput } from './convert.ts';

parentPort!.on('message', async (m: { id: number; input: ConvertInput }) => {
  try {
    const result = await convert({ ...m.input, body: Buffer.from(m.input.body.buffer, m.input.body.byteOffset, m.input.body.byteLength) });
    parentPort!.postMessage({ id: m.id, result });
  } catch (e) {
    parentPort!.postMessage({ id: m.id, error: (e as Error).stack ?? String(e) });
  }
});
