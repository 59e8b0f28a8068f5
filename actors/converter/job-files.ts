// What a websitepro job's outputs became: the stored files (`<jobId>/<output>`) and the index
// `<jobId>/_converted`, written and read by the leader and its followers (index.ts, follower.ts).
import type { ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/nats-core';
import { putObject } from '../../shared/nats/objects.ts';
import { objectName, type StoredFile, type Task } from '../../shared/protocol/jobs.ts';
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';
import type { ConvertPool } from './pool.ts';
import { CONTENT_TYPES, type TextOutput } from './types.ts';

export const TEXT_OUTPUTS = ['metadata', 'markdown', 'text', 'html', 'links', 'images'] as const;
/** `rawHtml`: the page as fetched or rendered; `render`: the charge for a browser render, a result with no file. */
export type Output = TextOutput | 'pdf' | 'rawHtml' | 'render';
export const isPoolOutput = (o: Output): o is TextOutput => (TEXT_OUTPUTS as readonly string[]).includes(o);

/** `extra`: the result's facts (`page`, `selectors`), given to every output of the job alike. */
export type Entry = ({ file: StoredFile } | { error: string; message: string } | { done: true }) & { extra?: Record<string, unknown> };

/** `<jobId>/_converted`: what the leader made of every output of the job. */
export interface ConvertedIndex {
  v: 1;
  at: number;
  outputs: Partial<Record<Output, Entry>>;
  /** pdf: `browser` means "print it in browser-pool"; a file or error means it is decided. */
  pdf?: 'browser' | Entry;
}
export const indexName = (jobId: string) => `${jobId}/_converted`;

export interface Deps {
  nc: NatsConnection;
  config: Config;
  log: Logger;
  pool: ConvertPool;
  store(name: string): Promise<ObjectStore>;
}

export const filenameFor = (url: string, ext: string) => {
  let host = 'page';
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').replace(/[^a-z0-9.-]/gi, '_') || 'page';
  } catch {
    /* keep the default */
  }
  return `${host}.${ext}`;
};

/** Store one output's file; its content type and file name go in the object's meta, so the file alone says what it is. */
export async function putFile(
  deps: Deps,
  task: Task,
  key: Output,
  data: Uint8Array,
  contentType: string,
  ext: string,
  url: string,
): Promise<StoredFile> {
  const name = objectName(task.jobId, key);
  const filename = filenameFor(url, ext);
  await putObject(deps.nc, task.store, { name, description: contentType, metadata: { filename } }, data);
  return { store: task.store, name, contentType, bytes: data.length, filename };
}

/** An output's stored file as its outcome would describe it, or null when there is none. */
export async function storedFile(st: ObjectStore, task: Task, key: Output): Promise<{ file: StoredFile } | null> {
  const info = await st.info(objectName(task.jobId, key)).catch(() => null);
  if (!info || info.deleted) return null;
  const known =
    key === 'pdf'
      ? { contentType: 'application/pdf', ext: 'pdf' }
      : key === 'rawHtml' || key === 'render'
        ? { contentType: 'text/html', ext: 'raw.html' }
        : CONTENT_TYPES[key];
  return {
    file: {
      store: task.store,
      name: info.name,
      contentType: info.description || known.contentType,
      bytes: info.size,
      filename: info.metadata?.filename ?? filenameFor(String(task.params.url ?? ''), known.ext),
    },
  };
}

export async function readIndex(st: ObjectStore, jobId: string): Promise<ConvertedIndex | null> {
  const raw = await st.getBlob(indexName(jobId)).catch(() => null);
  return raw ? (JSON.parse(new TextDecoder().decode(raw)) as ConvertedIndex) : null;
}

/**
 * A redelivered task finds what an earlier delivery (its own, or a follower that gave up waiting)
 * already made: the index, or every text output's file. A first delivery does not look: nothing can
 * be there yet, and the failed lookup cost a request per job.
 */
export async function earlierWork(st: ObjectStore, task: Task, outputs: Output[]): Promise<ConvertedIndex | null> {
  const index = await readIndex(st, task.jobId);
  if (index || outputs.includes('pdf') || outputs.includes('render')) return index;
  const found: ConvertedIndex = { v: 1, at: Date.now(), outputs: {} };
  for (const o of outputs) {
    const f = await storedFile(st, task, o);
    if (!f) return null;
    found.outputs[o] = f;
  }
  return found;
}
/** The job's results carry facts (`extra`: selectors counted): its followers read the index, which has them. */
export const hasFacts = (task: Task) => !!(task.params as { controls?: unknown }).controls;
