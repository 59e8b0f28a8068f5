// Runs convert() for the pool (pool.ts), one message at a time.
import { parentPort } from 'node:worker_threads';
import { getHeapStatistics } from 'node:v8';
import { convert, type ConvertInput } from './convert.ts';

parentPort!.on('message', async (m: { id: number; input: ConvertInput }) => {
  try {
    const result = await convert({ ...m.input, body: Buffer.from(m.input.body.buffer, m.input.body.byteOffset, m.input.body.byteLength) });
    parentPort!.postMessage({ id: m.id, result, heapMb: heapMb() });
  } catch (e) {
    parentPort!.postMessage({ id: m.id, error: (e as Error).stack ?? String(e), heapMb: heapMb() });
  }
});

/** This thread's heap in use, MB: the pool replaces a thread that stays large (pool.ts). */
const heapMb = () => getHeapStatistics().used_heap_size / 1048576;
