// Read a Server-Sent Events response as it arrives (eventsource-parser), so tests can assert on
// each event the moment it comes, before the stream ends.
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseReader {
  status: number;
  headers: Headers;
  /** Every event so far, data parsed as JSON. */
  events: { event: string; id?: string; data: any }[];
  comments: string[];
  /** Resolves with the first event (from the start) matching, or rejects when the stream ends first. */
  until(pred: (e: { event: string; id?: string; data: any }) => boolean): Promise<{ event: string; id?: string; data: any }>;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openSse(url: string, key: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers }, signal: ac.signal });
  const events: SseReader['events'] = [];
  const comments: string[] = [];
  let notify = () => {};
  const parser = createParser({
    onEvent(m: EventSourceMessage) {
      events.push({ event: m.event ?? 'message', id: m.id, data: JSON.parse(m.data) });
      notify();
    },
    onComment(c) {
      comments.push(c.trim());
      notify();
    },
  });
  let done = false;
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      /* closed by us */
    }
    done = true;
    notify();
  })();
  return {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    ended,
    close: () => ac.abort(),
    until(pred) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = events.find(pred);
          if (hit) return resolve(hit);
          if (done) return reject(new Error(`stream ended without the event; got ${events.map((e) => e.event).join(', ')}`));
          const prev = notify;
          notify = () => {
            prev();
            check();
          };
        };
        check();
      });
    },
  };
}
