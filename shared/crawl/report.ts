// The crawl report: why URLs were not pages (STYLE.md: "every request records why it ended"). Skipped
// URLs are not results; the job carries counts per reason and a bounded sample of URLs for each.
//
//   new CrawlReport(sample?)  .skip(reason, url)  .toJSON() → {skipped: {reason: {count, sample}}}
//   CrawlReport.from(json)    resume from the job document
//
// Bounded whatever the crawl finds: a fixed set of reasons, `sample` URLs per reason (default 10), each
// URL cut to 500 characters.

export const SKIP_REASONS = [
  'robots',
  'robots_unavailable',
  'other_origin',
  'excluded',
  'depth',
  'duplicate',
  'limit',
  'bad_url',
  'deadline',
] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

export interface ReportJson {
  skipped: Partial<Record<SkipReason, { count: number; sample: string[] }>>;
}

const URL_MAX = 500;

export class CrawlReport {
  private readonly data: ReportJson = { skipped: {} };
  private readonly sample: number;

  constructor(sample = 10) {
    this.sample = sample;
  }

  static from(json: ReportJson | undefined, sample = 10): CrawlReport {
    const r = new CrawlReport(sample);
    for (const reason of SKIP_REASONS) {
      const e = json?.skipped?.[reason];
      if (e) r.data.skipped[reason] = { count: e.count, sample: e.sample.slice(0, sample) };
    }
    return r;
  }

  skip(reason: SkipReason, url: string): void {
    const e = (this.data.skipped[reason] ??= { count: 0, sample: [] });
    e.count++;
    const u = url.slice(0, URL_MAX);
    if (e.sample.length < this.sample && !e.sample.includes(u)) e.sample.push(u);
  }

  count(reason: SkipReason): number {
    return this.data.skipped[reason]?.count ?? 0;
  }

  toJSON(): ReportJson {
    return {
      skipped: Object.fromEntries(Object.entries(this.data.skipped).map(([k, v]) => [k, { count: v.count, sample: [...v.sample] }])),
    };
  }
}
