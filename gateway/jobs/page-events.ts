// SSE of a page set (websitepro `urls`): one `result` event per recorded page, carrying that page's
// results, read from PAGES after the sequence the client has seen (its event id says it, so a
// resume on any gateway sends each page once). gateway/jobs/events.ts calls this on every document
// whose count of recorded results moved.
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import type { ResultDoc } from '../../shared/schemas/api.ts';
import { toPublicResult } from '../../shared/protocol/public-job.ts';
import { readPageResults, RESULTS_INLINE } from '../../shared/jobs/pages.ts';
import type { PagesReader } from '../../shared/jobs/page-results.ts';

export interface PageEvent {
  data: { pageKey: string; page?: unknown; source?: unknown; results: ResultDoc[] };
  /** The PAGES sequence to read from after this event. */
  nextSeq: number;
}

export async function* pageEvents(r: PagesReader, job: JobRecord, fromSeq: number, baseUrl: string): AsyncGenerator<PageEvent> {
  let from: number | null = fromSeq;
  while (from !== null) {
    const { messages, seqs, next } = await readPageResults(r.js, r.jsm, job.id, from, RESULTS_INLINE);
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      const facts = m.results[0]?.extra ?? {};
      yield {
        data: {
          pageKey: m.pageKey,
          page: facts.page,
          source: facts.source,
          results: m.results.map((x) => toPublicResult(job, x, baseUrl)),
        },
        nextSeq: seqs[i]! + 1,
      };
    }
    from = next;
  }
}
