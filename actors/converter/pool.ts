// A small pool of worker threads for jsdom work, so the actor's event loop stays free for
// heartbeats and NATS traffic while a large page converts. A conversion that runs too long or
// exhausts its heap kills only its thread. Threads are not recycled by count: a new thread costs
// about 1.2 s of CPU (tsx compiling the sources, loading jsdom; ~30 pages' worth), and one thread's
// RSS stayed flat over 2500 pages (docs/performance.md). A thread whose heap stays large after a
// conversion (a huge page's leftovers) is replaced.
import { Worker } from 'node:worker_threads';
import type { ConvertInput, ConvertResult } from './convert.ts';

export interface PoolOptions {
  size: number;
  /** Longest one conversion may take. */
  taskTimeoutMs?: number;
  /** Replace a thread after this many conversions (default: never). */
  recycleAfter?: number;
  /** Replace a thread whose heap in use after a conversion is above this, MB (default 512). */
  recycleHeapMb?: number;
  /** Heap of one thread, MB. */
  maxHeapMb?: number;
}

export class ConversionError extends Error {
  readonly code: 'conversion_timeout' | 'conversion_failed';
  constructor(code: 'conversion_timeout' | 'conversion_failed', message: string) {
    super(message);
    this.code = code;
    this.name = 'ConversionError';
  }
}

interface Slot {
  worker: Worker;
  busy: boolean;
  done: number;
}

interface Job {
  input: ConvertInput;
  resolve: (r: ConvertResult) => void;
  reject: (e: Error) => void;
  timeoutMs?: number;
}

const ENTRY = new URL('./thread-boot.mjs', import.meta.url);

export class ConvertPool {
  private slots: Slot[] = [];
  private queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  private spawned = 0;
  private opts: PoolOptions;
  constructor(opts: PoolOptions) {
    this.opts = opts;
  }

  get size() {
    return this.opts.size;
  }

  /** Threads started so far (replacements included). */
  get started() {
    return this.spawned;
  }

  /** Convert on a free thread; `timeoutMs` overrides the pool's limit for this one call. */
  run(input: ConvertInput, timeoutMs?: number): Promise<ConvertResult> {
    if (this.closed) return Promise.reject(new ConversionError('conversion_failed', 'converter pool is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject, timeoutMs });
      this.pump();
    });
  }

  private spawn(): Slot {
    const worker = new Worker(ENTRY, { resourceLimits: { maxOldGenerationSizeMb: this.opts.maxHeapMb ?? 1024 } });
    worker.unref();
    this.spawned++;
    const slot: Slot = { worker, busy: false, done: 0 };
    this.slots.push(slot);
    return slot;
  }

  private retire(slot: Slot) {
    this.slots = this.slots.filter((s) => s !== slot);
    void slot.worker.terminate();
  }

  private pump() {
    while (this.queue.length) {
      let slot = this.slots.find((s) => !s.busy);
      if (!slot) {
        if (this.slots.length >= this.opts.size) return;
        slot = this.spawn();
      }
      this.exec(slot, this.queue.shift()!);
    }
  }

  private exec(slot: Slot, job: Job) {
    slot.busy = true;
    const id = this.nextId++;
    const w = slot.worker;
    const finish = (fn: () => void, healthy: boolean) => {
      clearTimeout(timer);
      w.off('message', onMessage);
      w.off('error', onError);
      w.off('exit', onExit);
      slot.busy = false;
      slot.done++;
      if (!healthy || slot.done >= (this.opts.recycleAfter ?? Infinity)) this.retire(slot);
      fn();
      this.pump();
    };
    const onMessage = (m: { id: number; result?: ConvertResult; error?: string; heapMb?: number }) => {
      if (m.id !== id) return;
      const healthy = (m.heapMb ?? 0) <= (this.opts.recycleHeapMb ?? 512);
      if (m.error !== undefined) finish(() => job.reject(new ConversionError('conversion_failed', m.error!.split('\n')[0]!)), healthy);
      else finish(() => job.resolve(m.result!), healthy);
    };
    const onError = (e: Error) =>
      finish(() => job.reject(new ConversionError('conversion_failed', `converter thread died: ${e.message}`)), false);
    const onExit = (code: number) =>
      finish(() => job.reject(new ConversionError('conversion_failed', `converter thread exited (${code})`)), false);
    const timeoutMs = job.timeoutMs ?? this.opts.taskTimeoutMs ?? 60000;
    const timer = setTimeout(
      () => finish(() => job.reject(new ConversionError('conversion_timeout', `conversion took longer than ${timeoutMs} ms`)), false),
      timeoutMs,
    );
    w.on('message', onMessage);
    w.once('error', onError);
    w.once('exit', onExit);
    w.postMessage({ id, input: job.input });
  }

  async close() {
    this.closed = true;
    for (const j of this.queue.splice(0)) j.reject(new ConversionError('conversion_failed', 'converter pool closed'));
    await Promise.all(this.slots.splice(0).map((s) => s.worker.terminate()));
  }
}
